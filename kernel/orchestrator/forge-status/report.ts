// What a delivery says about its run, read when it is sent (so a delivery that waited sends the
// run as it is now, with the status change it stands for): the run record, its jobs for the
// summary, the link to the run page, and the forge-neutral title and Markdown summary.
import { Type, type Static } from 'typebox';
import type { RunReportConclusion, RunReportState } from '../../../core/extension-points/provider.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { describeState } from './state.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const RunView = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  repository: Type.String(),
  workflow: Type.String(),
  sha: Type.String(),
  ref: Nullable(Type.String()),
  event_name: Type.String(),
  status: Type.String(),
  reason: Nullable(Type.String()),
  event: Type.Unknown(),
  created_at: Type.Number(),
  started_at: Nullable(Type.Number()),
  finished_at: Nullable(Type.Number()),
});
export type RunView = Static<typeof RunView>;

const JobView = Type.Object({ display_name: Type.String(), status: Type.String(), reason: Nullable(Type.String()) });
type JobView = Static<typeof JobView>;

export async function readRun(pool: DatabasePool, runId: string): Promise<RunView | null> {
  return pool.maybeOne(sqlTyped(RunView)`
    SELECT id::text AS id, org_id, repository, workflow, sha, ref, event_name, status, reason, event, created_at, started_at, finished_at
    FROM runs WHERE id = ${runId}`);
}

/** The run's own jobs (not build or scheduling pseudo-jobs), in creation order; at most `limit`. */
async function readJobs(pool: DatabasePool, runId: string, limit: number): Promise<readonly JobView[]> {
  return pool.any(sqlTyped(JobView)`
    SELECT display_name, status, reason FROM jobs
    WHERE run_id = ${runId} AND kind = 'job' AND name NOT LIKE 'svc:%'
    ORDER BY created_at, display_name LIMIT ${limit}`);
}

/** `template` with `{orgId}` and `{runId}` filled in (URL-encoded). */
export function runUrl(template: string, orgId: string, runId: string): string {
  return template.replaceAll('{orgId}', encodeURIComponent(orgId)).replaceAll('{runId}', encodeURIComponent(runId));
}

/** Where a run page is when no template is configured: the relay's run route, else this orchestrator's admin route. */
export function defaultRunUrlTemplate(platformUrl: string | undefined, publicUrl: string): string {
  if (platformUrl !== undefined) return `${platformUrl.replace(/\/+$/, '')}/v1/orgs/{orgId}/runs/{runId}`;
  return `${publicUrl.replace(/\/+$/, '')}/api/v1/admin/runs/{runId}`;
}

const MAX_JOB_ROWS = 50;
/** GitHub's limit for a check run summary. */
const MAX_SUMMARY = 65_535;

/** Text safe inside a Markdown table cell. */
function cell(text: string): string {
  return text.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|').slice(0, 300);
}

export interface ReportText {
  title: string;
  summary: string;
}

/** `ci: failed` and a Markdown summary (reason, link, event, commit, jobs). */
export async function reportText(
  pool: DatabasePool,
  run: RunView,
  status: string,
  reported: { state: RunReportState; conclusion: RunReportConclusion | null },
  url: string,
): Promise<ReportText> {
  const words = describeState(status, reported);
  const title = `${run.workflow}: ${words}`.slice(0, 200);
  const lines: string[] = [];
  lines.push(`**${cell(run.workflow)}** ${words}${run.reason && reported.state === 'completed' ? `: ${cell(run.reason)}` : ''}`);
  lines.push('');
  const ref = run.ref === null ? '' : ` on ${cell(run.ref.replace(/^refs\/(heads|tags)\//, ''))}`;
  lines.push(`[Run ${run.id}](${url}) · ${cell(run.event_name)}${ref} · commit ${cell(run.sha.slice(0, 12) || '-')}`);
  const jobs = await readJobs(pool, run.id, MAX_JOB_ROWS + 1);
  if (jobs.length > 0) {
    lines.push('', '| Job | Status |', '|---|---|');
    for (const job of jobs.slice(0, MAX_JOB_ROWS)) lines.push(`| ${cell(job.display_name)} | ${cell(job.status)}${job.reason ? `: ${cell(job.reason)}` : ''} |`);
    if (jobs.length > MAX_JOB_ROWS) lines.push('', `… and more jobs: see the run page.`);
  }
  return { title, summary: lines.join('\n').slice(0, MAX_SUMMARY) };
}
