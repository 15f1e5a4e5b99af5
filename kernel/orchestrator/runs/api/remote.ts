// `svc run remote` on the orchestrator (docs/run-remote.md), reached only through the relay
// (spec "Authentication" 3):
//   remote.upload.request → an upload slot: a pre-signed PUT (developer audience) for the sealed
//     overlay under `remote-runs/<org>/<uploadId>.box` and this orchestrator's X25519 public key.
//   remote.run.request    → one run per workflow the CLI matched for a fixture, against the lock
//     it compiled from the overlaid tree: an ordinary run of the commit at HEAD, marked
//     `source_origin = 'run-remote'` (a test run: `ctx.isTestRun`, identity claim `run-remote`),
//     carrying the overlay's key material, the sealed local secrets and the fixture's context map.
// The X25519 key is derived from the master key (every node of a cluster derives the same one,
// nothing more is stored); remote runs need a master key and storage.
import { randomUUID, hkdfSync, type KeyObject } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import { Type } from 'typebox';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import { NormalizedEvent as NormalizedEventSchema } from '../../../../schemas/event.ts';
import { LockWorkflow } from '../../../../schemas/lock.ts';
import type { RemoteRunBody, RemoteRunResult, RemoteUpload } from '../../../../schemas/http/remote-run.ts';
import type { StorageExtensionPoint } from '../../../../core/extension-points/storage.ts';
import { boxEphemeralKey, boxKey, openBoxWithKey, rawPublicKey, x25519PrivateKey } from '../../../../core/remote-run-box.ts';
import { compileSchema, formatIssues } from '../../../../schemas/validate.ts';
import { InputError, NotAllowedError, NotFoundError, UnavailableError, messageOf } from '../../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import type { MasterKeys } from '../../../services/crypto/master-keys.ts';
import { createPublicKey } from 'node:crypto';
import { createRun, type RunPlan } from '../create.ts';
import type { CacheCheck } from '../../ingest/steps/caches.ts';

/** Storage prefix of sealed overlays. */
export const REMOTE_RUN_PREFIX = 'remote-runs';
/** How long the developer has to upload after asking for a slot. */
export const UPLOAD_EXPIRY_SECONDS = 900;

export interface RemoteRunDeps {
  pool: DatabasePool;
  storage(): StorageExtensionPoint | undefined;
  masterKeys(): MasterKeys | undefined;
  checkCaches(orgId: string, contentHash: string, lockfileHash: string | null): Promise<CacheCheck>;
  notifyJobsQueued(tx: CommonQueryMethods): Promise<void>;
}

const checkWorkflow = compileSchema(LockWorkflow);
const checkEvent = compileSchema(NormalizedEventSchema);
const SourceRow = Type.Object({ id: Type.String(), provider_kind: Type.String() });
const ContextRow = Type.Object({ name: Type.String(), allow_local_execution: Type.Boolean() });

/** This orchestrator's X25519 key for remote-run boxes, from a master key. */
export function remoteRunPrivateKey(masterKey: Buffer): KeyObject {
  return x25519PrivateKey(Buffer.from(hkdfSync('sha256', masterKey, Buffer.from('svc'), Buffer.from('svc run-remote x25519 v1'), 32)));
}

function currentKey(deps: RemoteRunDeps): KeyObject {
  const current = deps.masterKeys()?.current;
  if (current === undefined) {
    throw new UnavailableError('SVC_ERR_REMOTE_RUN_UNAVAILABLE', 'remote runs need a master key on the orchestrator (SVC_SECRET_KEY): uploads are sealed to a key derived from it');
  }
  return remoteRunPrivateKey(current);
}

function storageOf(deps: RemoteRunDeps): StorageExtensionPoint {
  const storage = deps.storage();
  if (storage === undefined) throw new UnavailableError('SVC_ERR_REMOTE_RUN_UNAVAILABLE', 'remote runs require cache storage (SVC_STORAGE_TYPE) on the orchestrator');
  return storage;
}

export function overlayKeyOf(orgId: string, uploadId: string): string {
  return `${REMOTE_RUN_PREFIX}/${orgId}/${uploadId}.box`;
}

export async function createUpload(deps: RemoteRunDeps, orgId: string): Promise<RemoteUpload> {
  const key = currentKey(deps);
  const storage = storageOf(deps);
  const uploadId = randomUUID();
  const uploadUrl = await storage.presign({ method: 'PUT', key: overlayKeyOf(orgId, uploadId), expiresInSeconds: UPLOAD_EXPIRY_SECONDS, audience: 'developer' });
  const publicKey = rawPublicKey(createPublicKey(key)).toString('base64');
  return { uploadId, uploadUrl, publicKey, expiresInSeconds: UPLOAD_EXPIRY_SECONDS };
}

/**
 * The sealed secrets open (else the run is refused now rather than at each job): with the current
 * key, or the old one for an upload slot handed out just before a master-key rotation.
 */
function checkSecretsBox(keys: readonly KeyObject[], box: string): void {
  const bytes = Buffer.from(box, 'base64');
  const opened = keys.map((key) => {
    try {
      return openBoxWithKey(boxKey(key, boxEphemeralKey(bytes)), bytes);
    } catch (error) {
      if (keys.length > 1 && error instanceof InputError && error.code === 'SVC_ERR_REMOTE_RUN_BOX_INVALID') return undefined;
      throw error;
    }
  });
  const plain = opened.find((p) => p !== undefined);
  if (plain === undefined) throw new InputError('SVC_ERR_REMOTE_RUN_BOX_INVALID', 'the sealed secrets do not open with the current or the previous master key of this orchestrator (altered, or sealed for another key); upload again');
  let parsed: unknown;
  try {
    parsed = JSON.parse(plain.toString('utf8'));
  } catch {
    parsed = null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.values(parsed).some((v) => typeof v !== 'string')) {
    throw new InputError('SVC_ERR_REMOTE_RUN_SECRETS_INVALID', 'the sealed secrets are not a map of names to text values');
  }
}

/** Spec "Authentication" 7: a fixture may map only to contexts flagged allowLocalExecution. */
async function checkContexts(pool: DatabasePool, contexts: Record<string, string>): Promise<void> {
  const targets = [...new Set(Object.values(contexts))];
  if (targets.length === 0) return;
  const rows = await pool.any(sqlTyped(ContextRow)`SELECT name, allow_local_execution FROM secret_contexts WHERE name = ANY(${sql.array(targets, 'text')})`);
  const byName = new Map(rows.map((r) => [r.name, r.allow_local_execution]));
  for (const [local, target] of Object.entries(contexts)) {
    const allowed = byName.get(target);
    if (allowed === undefined) throw new NotFoundError('SVC_ERR_REMOTE_RUN_CONTEXT_UNKNOWN', `the fixture maps secrets "${local}" to context "${target}", which does not exist on the orchestrator`);
    if (!allowed) {
      throw new NotAllowedError('SVC_ERR_REMOTE_RUN_CONTEXT_DENIED', `the fixture maps secrets "${local}" to context "${target}", which is not a test context (allowLocalExecution is false); test runs may reach only contexts with allowLocalExecution: true`);
    }
  }
}

/** The source serving `repository` in the org (its checkout credentials serve the agents). */
async function sourceFor(pool: DatabasePool, orgId: string, repository: string): Promise<{ id: string; provider: string }> {
  // The source of the repository's latest run: the one its webhooks arrive through.
  const row = await pool.maybeOne(sqlTyped(SourceRow)`
    SELECT source_id::text AS id, provider AS provider_kind FROM runs
    WHERE org_id = ${orgId} AND lower(repository) = lower(${repository}) AND source_id IS NOT NULL AND source_origin = 'triggered'
    ORDER BY created_at DESC LIMIT 1`);
  if (row !== null) return { id: row.id, provider: row.provider_kind };
  const any = await pool.maybeOne(sqlTyped(SourceRow)`
    SELECT id::text AS id, provider_kind FROM sources
    WHERE org_id = ${orgId} AND (lower(settings->>'repository') = lower(${repository}) OR settings->>'repository' IS NULL)
    ORDER BY (lower(settings->>'repository') = lower(${repository})) DESC NULLS LAST LIMIT 1`);
  if (any === null) throw new NotFoundError('SVC_ERR_REMOTE_RUN_NO_SOURCE', `no source of org ${orgId} serves ${repository}; add one (svc-admin source add) or set the fixture's repo`);
  return { id: any.id, provider: any.provider_kind };
}

function subjectKind(event: NormalizedEvent): 'ref' | 'pull_request' {
  return event.pullRequest !== null || event.type === 'pr' || event.type === 'review' || event.type === 'review_comment' ? 'pull_request' : 'ref';
}

export async function createRemoteRuns(deps: RemoteRunDeps, orgId: string, actor: string, body: RemoteRunBody): Promise<RemoteRunResult> {
  const key = currentKey(deps);
  const storage = storageOf(deps);
  const eventCheck = checkEvent.validate(body.event);
  if (!eventCheck.ok) throw new InputError('SVC_ERR_REMOTE_RUN_INVALID', `the fixture's event is not a normalized event: ${formatIssues(eventCheck.issues)}`);
  const event = eventCheck.value;
  const workflows = body.workflows.map((w, i) => {
    const checked = checkWorkflow.validate(w);
    if (!checked.ok) throw new InputError('SVC_ERR_REMOTE_RUN_INVALID', `workflow entry ${i} is not a lock workflow: ${formatIssues(checked.issues)}; compile with the same svc version as the orchestrator`);
    return checked.value;
  });
  const overlayKey = overlayKeyOf(orgId, body.uploadId);
  const head = await storage.head(overlayKey);
  if (head === null) throw new NotFoundError('SVC_ERR_REMOTE_RUN_UPLOAD_MISSING', `no overlay was uploaded for ${body.uploadId}; upload it to the pre-signed URL first`);
  const headerStream = await storage.get(overlayKey);
  const header = await firstBytes(headerStream, 64);
  const epk = boxEphemeralKey(header);
  if (body.secretsBox !== undefined) checkSecretsBox([key, ...(deps.masterKeys()?.all ?? []).filter((k) => k.name !== 'current').map((k) => remoteRunPrivateKey(k.key))], body.secretsBox);
  const contexts = body.contexts ?? {};
  await checkContexts(deps.pool, contexts);
  const source = await sourceFor(deps.pool, orgId, body.repository);
  const runs: RemoteRunResult['runs'] = [];
  const plans: RunPlan[] = [];
  for (const workflow of workflows) {
    const caches = await deps.checkCaches(orgId, workflow.contentHash, body.lockfileHash);
    plans.push({
      orgId,
      deliveryKey: null,
      sourceId: source.id,
      provider: source.provider,
      repository: body.repository,
      workflowRepository: body.repository,
      workflowSourceId: source.id,
      workflowCloneUrl: null,
      workflow,
      workflowSha: body.sha,
      workflowRef: body.ref,
      sha: body.sha,
      ref: body.ref,
      eventName: event.eventName,
      subjectKind: subjectKind(event),
      actor,
      // An authenticated member of the org started it (their token): trusted, like a push to the
      // repository; identity tokens still tell it apart by source_origin = run-remote.
      trustTier: 'trusted',
      isFork: 'false',
      headRef: event.pullRequest?.headRef ?? '',
      headRepository: event.pullRequest?.headRepository ?? '',
      lockfileHash: body.lockfileHash,
      event,
      changedFiles: body.changedFiles,
      workflowModified: false,
      buildKey: caches.buildKey,
    });
  }
  await deps.pool.transaction(async (tx) => {
    let queued = false;
    for (const plan of plans) {
      const created = await createRun(tx, plan);
      await tx.query(sql.unsafe`
        UPDATE runs SET source_origin = 'run-remote', triggered_by = ${actor}, remote_overlay_key = ${overlayKey},
          remote_overlay_epk = ${epk.toString('base64')}, remote_secrets_box = ${body.secretsBox ?? null},
          remote_contexts = ${JSON.stringify(contexts)}::jsonb, remote_fixture = ${body.fixture}, updated_at = now()
        WHERE id = ${created.runId}`);
      runs.push({ runId: created.runId, workflow: plan.workflow.name });
      if (created.queuedJobs > 0) queued = true;
    }
    if (queued) await deps.notifyJobsQueued(tx);
  });
  return { runs, warnings: [] };
}

async function firstBytes(stream: NodeJS.ReadableStream, count: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      total += chunk.length;
      if (total >= count) break;
    }
  } catch (error) {
    throw new UnavailableError('SVC_ERR_REMOTE_RUN_UNAVAILABLE', `the uploaded overlay could not be read: ${messageOf(error)}`);
  } finally {
    (stream as { destroy?: () => void }).destroy?.();
  }
  return Buffer.concat(chunks).subarray(0, count);
}

/** What a job of a remote run gets at dispatch: the overlay's GET URL and key, the opened secrets. */
export interface RemoteDispatchParts {
  overlay?: { url: string; key: string };
  secrets?: Record<string, string>;
  contexts?: Record<string, string>;
}

export interface RemoteRunColumns {
  remote_overlay_key: string | null;
  remote_overlay_epk: string | null;
  remote_secrets_box: string | null;
  remote_contexts: unknown;
}

/**
 * The X25519 key (derived from one of the master keys) the run's boxes were sealed to. Like the
 * other sealed stores (openWithAny), the current key is tried first, then SVC_SECRET_KEY_OLD, so
 * a run queued before a rotation still dispatches while the old key is configured. The boxes say
 * nothing about their key, so the candidate is the one that opens the secrets box, or when there
 * is none the overlay itself (read from storage only when there are two keys to choose from).
 */
async function runBoxKey(row: RemoteRunColumns & { remote_overlay_key: string }, storage: StorageExtensionPoint, masterKeys: MasterKeys): Promise<{ key: KeyObject; secrets?: Buffer }> {
  const candidates = masterKeys.all.map((named) => ({ name: named.name, key: remoteRunPrivateKey(named.key) }));
  const secretsBox = row.remote_secrets_box === null ? undefined : Buffer.from(row.remote_secrets_box, 'base64');
  if (candidates.length === 1 && secretsBox === undefined) return { key: candidates[0]!.key };
  const box = secretsBox ?? (await readAll(await storage.get(row.remote_overlay_key)));
  for (const candidate of candidates) {
    try {
      const plain = openBoxWithKey(boxKey(candidate.key, boxEphemeralKey(box)), box);
      return secretsBox === undefined ? { key: candidate.key } : { key: candidate.key, secrets: plain };
    } catch (error) {
      if (!(error instanceof InputError) || error.code !== 'SVC_ERR_REMOTE_RUN_BOX_INVALID') throw error;
    }
  }
  throw new UnavailableError(
    'SVC_ERR_REMOTE_RUN_UNAVAILABLE',
    `this remote run's ${secretsBox === undefined ? 'overlay' : 'sealed secrets'} opens with no master key of this orchestrator (tried ${candidates.map((c) => c.name).join(' and ')}); it was queued under a master key that is no longer configured: set it as SVC_SECRET_KEY_OLD, or start the run again`,
  );
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  } catch (error) {
    throw new UnavailableError('SVC_ERR_REMOTE_RUN_UNAVAILABLE', `the remote run's overlay could not be read: ${messageOf(error)}`);
  }
  return Buffer.concat(chunks);
}

export async function remoteDispatchParts(row: RemoteRunColumns, storage: StorageExtensionPoint | undefined, masterKeys: MasterKeys | undefined): Promise<RemoteDispatchParts> {
  const overlayKey = row.remote_overlay_key;
  if (overlayKey === null || row.remote_overlay_epk === null) return {};
  if (masterKeys?.current === undefined || storage === undefined) {
    throw new UnavailableError('SVC_ERR_REMOTE_RUN_UNAVAILABLE', 'this remote run needs the orchestrator\'s master key and storage to hand its overlay to the agent');
  }
  const { key, secrets } = await runBoxKey({ ...row, remote_overlay_key: overlayKey }, storage, masterKeys);
  const url = await storage.presign({ method: 'GET', key: overlayKey, audience: 'agent' });
  const parts: RemoteDispatchParts = { overlay: { url, key: boxKey(key, Buffer.from(row.remote_overlay_epk, 'base64')).toString('base64') } };
  if (secrets !== undefined) parts.secrets = JSON.parse(secrets.toString('utf8')) as Record<string, string>;
  if (typeof row.remote_contexts === 'object' && row.remote_contexts !== null && !Array.isArray(row.remote_contexts)) {
    parts.contexts = row.remote_contexts as Record<string, string>;
  }
  return parts;
}
