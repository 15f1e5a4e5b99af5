// Run status as GitHub check runs (the provider's `reportRunStatus`): one check run per workflow
// run on the run's commit, named after the workflow, created through the App installation and
// updated in place (PATCH by the id the first report returned) as the run moves on:
// `queued` → `in_progress` → `completed` with a conclusion, an output title and summary, and a
// link to the run page. The App needs the `checks: write` permission.
import type { Logger } from 'pino';
import type { RunReportConclusion, RunStatusReport, RunStatusResult } from '../../../core/extension-points/provider.ts';
import { InputError, NotFoundError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';
import type { GithubAppClient } from './app-client.ts';
import type { GithubRepositoryApi } from './repository-api.ts';
import { githubSourceOf, ownerAndRepo } from './settings.ts';

const SHA = /^[0-9a-f]{40}$/;
const CHECK_RUN_ID = /^[1-9][0-9]{0,19}$/;
/** GitHub's limits on check run fields. */
const MAX_NAME = 255;
const MAX_TITLE = 255;
const MAX_SUMMARY = 65_535;

/** The body GitHub documents for "Create a check run" / "Update a check run". */
export interface CheckRunBody {
  name: string;
  head_sha?: string;
  details_url?: string;
  external_id: string;
  status: 'queued' | 'in_progress' | 'completed';
  started_at?: string;
  conclusion?: RunReportConclusion;
  completed_at?: string;
  output: { title: string; summary: string };
}

/** Only http(s) links: GitHub refuses anything else as `details_url`. */
function detailsUrl(url: string): string | undefined {
  return /^https?:\/\/\S+$/.test(url) ? url : undefined;
}

export function checkRunBody(request: RunStatusReport, create: boolean): CheckRunBody {
  const { run } = request;
  const details = detailsUrl(run.url);
  const body: CheckRunBody = {
    name: run.workflow.slice(0, MAX_NAME) || 'svc',
    ...(create ? { head_sha: run.sha } : {}),
    ...(details === undefined ? {} : { details_url: details }),
    external_id: run.id,
    status: request.state,
    output: { title: request.title.slice(0, MAX_TITLE) || request.state, summary: request.summary.slice(0, MAX_SUMMARY) || request.title },
  };
  if (request.state !== 'queued' && run.startedAt !== null) body.started_at = run.startedAt;
  if (request.state === 'completed') {
    body.conclusion = request.conclusion ?? 'neutral';
    body.completed_at = run.finishedAt ?? new Date().toISOString();
  }
  return body;
}

/** An Octokit error as ours: 4xx (but 408 and 429) is a refusal no retry fixes; the rest is retried. */
function checkRunError(error: unknown, what: string): SvcError {
  if (error instanceof SvcError) return error;
  const status = (error as { status?: unknown } | null)?.status;
  const detail = messageOf(error).split('\n')[0]!.slice(0, 300);
  if (typeof status === 'number' && status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 404 && status !== 408 && status !== 429) {
    return new InputError('SVC_ERR_GITHUB_CHECK_RUN_REFUSED', `${what}: GitHub refused the request (${status}): ${detail}`, { cause: error, details: { statusCode: status } });
  }
  return new UnavailableError('SVC_ERR_GITHUB_CHECK_RUN_FAILED', `${what}: GitHub answered ${typeof status === 'number' ? status : 'no status'}: ${detail}`, {
    cause: error,
    ...(typeof status === 'number' ? { details: { statusCode: status } } : {}),
  });
}

export class GithubCheckRuns {
  readonly #client: GithubAppClient;
  readonly #api: GithubRepositoryApi;
  readonly #logger: Logger;

  constructor(options: { client: GithubAppClient; api: GithubRepositoryApi; logger: Logger }) {
    this.#client = options.client;
    this.#api = options.api;
    this.#logger = options.logger;
  }

  async report(request: RunStatusReport): Promise<RunStatusResult> {
    // Decided before any I/O: no commit, no check run.
    if (typeof request.run.sha !== 'string' || !SHA.test(request.run.sha)) return { outcome: 'skipped', reason: 'the run is not on a commit (no 40-hex sha): GitHub check runs need one' };
    const source = githubSourceOf(request.source);
    if (!source.checkRuns) return { outcome: 'skipped', reason: `check runs are turned off for source ${source.id} (settings.checkRuns: false)` };
    const { owner, repo } = ownerAndRepo(request.repository);
    const octokit = await this.#client.installationOctokit(source, await this.#api.installationIdOf(source, request.repository));
    const existing = request.externalId !== null && CHECK_RUN_ID.test(request.externalId) ? request.externalId : null;
    if (existing !== null) {
      try {
        await octokit.request('PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}', {
          owner,
          repo,
          check_run_id: Number(existing),
          ...checkRunBody(request, false),
          request: this.#client.requestOptions(),
        });
        return { outcome: 'reported', externalId: existing };
      } catch (error) {
        const mapped = checkRunError(error, `check run ${existing} of ${owner}/${repo}`);
        // Deleted on GitHub's side (or never visible to this installation): start a new one.
        if (!(mapped.details?.['statusCode'] === 404 || mapped instanceof NotFoundError)) throw mapped;
        this.#logger.warn({ repository: `${owner}/${repo}`, checkRunId: existing }, 'check run not found on update; creating a new one');
      }
    }
    let data: unknown;
    try {
      const response = await octokit.request('POST /repos/{owner}/{repo}/check-runs', {
        owner,
        repo,
        ...(checkRunBody(request, true) as CheckRunBody & { head_sha: string }),
        request: this.#client.requestOptions(),
      });
      data = response.data;
    } catch (error) {
      throw checkRunError(error, `check run for ${owner}/${repo} at ${request.run.sha}`);
    }
    const id = String((data as { id?: unknown } | null)?.id ?? '');
    if (!CHECK_RUN_ID.test(id)) throw new UnavailableError('SVC_ERR_GITHUB_CHECK_RUN_RESPONSE', `GitHub returned no check run id for ${owner}/${repo}`);
    return { outcome: 'reported', externalId: id };
  }
}
