// One attempt of one leased delivery, to its target: the source provider's `reportRunStatus`
// (through the extension point, never a concrete plugin) or the source's run-status webhook.
// Returns how the attempt ended; it never throws and never writes anything but its own table.
import type { NormalizedEvent } from '../../../schemas/event.ts';
import type { PluginHost } from '../../../core/plugins/index.ts';
import type { ProviderSource, RepositoryRef } from '../../../core/extension-points/provider.ts';
import { isSvcError, messageOf } from '../../../core/errors.ts';
import type { NamedKey } from '../../services/crypto/sealing.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { repositoryOf } from '../ingest/steps/repository.ts';
import { getSourceRow, openSource } from '../sources/store.ts';
import { readRun, reportText, runUrl, type RunView } from './report.ts';
import { backoffMs, laterDelivered, previousExternalId, type Finish, type LeasedDelivery } from './store.ts';
import { openStatusWebhook } from './webhook-config.ts';
import { postWebhook, webhookPayload } from './webhook-send.ts';

export interface SendDeps {
  pool: DatabasePool;
  host: PluginHost;
  keys: readonly NamedKey[];
  /** Run page link template (`{orgId}`, `{runId}`). */
  runUrlTemplate: string;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  requestTimeoutMs: number;
  now?: () => Date;
}

type Delivered = { status: 'delivered'; statusCode: number | null; externalId: string | null } | { status: 'skipped'; reason: string };

/** The forge's HTTP status carried by an error (`details.statusCode`, or `details.status` as githubError puts it). */
function statusCodeOf(error: unknown): number | null {
  const details = isSvcError(error) ? error.details : (error as { details?: Record<string, unknown> } | null)?.details;
  const value = details?.['statusCode'] ?? details?.['status'] ?? (error as { status?: unknown } | null)?.status;
  return typeof value === 'number' && Number.isInteger(value) && value >= 100 && value <= 599 ? value : null;
}

async function toProvider(deps: SendDeps, d: LeasedDelivery, run: RunView, url: string): Promise<Delivered> {
  const row = await getSourceRow(deps.pool, d.source_id);
  if (row === null) return { status: 'skipped', reason: `source ${d.source_id} was removed` };
  if (!deps.host.has('provider', row.provider_kind)) return { status: 'skipped', reason: `no ${row.provider_kind} provider is signed in on this orchestrator` };
  const provider = deps.host.get('provider', row.provider_kind);
  if (provider.reportRunStatus === undefined) return { status: 'skipped', reason: `the ${row.provider_kind} provider does not report run status` };
  const opened = openSource(row, deps.keys);
  const source: ProviderSource = { id: opened.id, orgId: opened.orgId, routingKey: opened.routingKey, settings: opened.settings, credentials: opened.credentials };
  const fromEvent = repositoryOf(run.event as NormalizedEvent);
  const repository: RepositoryRef = fromEvent ?? { id: run.repository, fullName: run.repository };
  const reported = { state: d.state, conclusion: d.conclusion };
  const text = await reportText(deps.pool, run, d.run_status, reported, url);
  const result = await provider.reportRunStatus({
    source,
    repository,
    run: {
      id: run.id,
      orgId: run.org_id,
      workflow: run.workflow,
      sha: run.sha,
      ref: run.ref,
      eventName: run.event_name,
      status: d.run_status,
      reason: run.reason,
      createdAt: new Date(run.created_at).toISOString(),
      startedAt: run.started_at === null ? null : new Date(run.started_at).toISOString(),
      finishedAt: run.finished_at === null ? null : new Date(run.finished_at).toISOString(),
      url,
    },
    ...reported,
    ...text,
    externalId: await previousExternalId(deps.pool, d),
  });
  if (result.outcome === 'skipped') return { status: 'skipped', reason: result.reason };
  return { status: 'delivered', statusCode: null, externalId: result.externalId };
}

async function toWebhook(deps: SendDeps, d: LeasedDelivery, run: RunView, url: string): Promise<Delivered> {
  const webhook = await openStatusWebhook(deps.pool, deps.keys, d.source_id);
  if (webhook === null) return { status: 'skipped', reason: `source ${d.source_id} has no run-status webhook any more` };
  const now = deps.now?.() ?? new Date();
  const statusCode = await postWebhook(webhook, webhookPayload(d, run, url, now), { timeoutMs: deps.requestTimeoutMs, now });
  return { status: 'delivered', statusCode, externalId: null };
}

/** How this attempt of `d` ended. */
export async function sendDelivery(deps: SendDeps, d: LeasedDelivery): Promise<Finish> {
  try {
    if (await laterDelivered(deps.pool, d)) return { status: 'superseded', reason: 'a later status of the run was already delivered to this target' };
    const run = await readRun(deps.pool, d.run_id);
    if (run === null) return { status: 'skipped', reason: `run ${d.run_id} no longer exists` };
    const url = runUrl(deps.runUrlTemplate, run.org_id, run.id);
    return d.target === 'provider' ? await toProvider(deps, d, run, url) : await toWebhook(deps, d, run, url);
  } catch (error) {
    const message = messageOf(error).split('\n')[0]!.slice(0, 1000);
    const statusCode = statusCodeOf(error);
    // The forge refused the request itself: retrying will not change its mind.
    const permanent = isSvcError(error) && error.kind === 'input';
    if (permanent || d.attempts >= deps.maxAttempts) {
      return { status: 'failed', error: permanent ? message : `${message} (attempt ${d.attempts} of ${deps.maxAttempts}; no more attempts)`, statusCode };
    }
    return { status: 'retry', error: message, statusCode, delayMs: backoffMs(d.attempts, deps.retryBaseMs, deps.retryMaxMs) };
  }
}
