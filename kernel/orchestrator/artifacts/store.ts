// Run artifacts (ctx.artifacts, docs/artifacts.md), orchestrator side. Bytes move between the
// agent and storage through pre-signed URLs; the orchestrator only hands out URLs and keeps the
// rows. An upload is two-phase, like the user cache: a pre-signed PUT to a temporary object,
// then a commit that checks the object, copies it to its content-addressed key inside the run's
// namespace (artifacts/<org>/<run>/<sha256 hex>.tar.gz) and records the row, so a crashed upload
// never shows up as an artifact. The digest is the agent's; every download checks it, so a
// stored object that differs from it is refused rather than extracted.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { checkArtifactName } from '../../../core/artifact-names.ts';
import { InputError, NotFoundError, UnavailableError } from '../../../core/errors.ts';
import type {
  ArtifactCommitRequest,
  ArtifactDownloadRequest,
  ArtifactInfo,
  ArtifactUploadRequest,
} from '../../../schemas/wire/agent.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { checkOrg } from '../caches/keys.ts';
import { activeJobOf, type AgentJobRow } from '../caches/job-access.ts';

/** Pre-signed URL lifetime (spec "Limits": 15 minutes). */
export const ARTIFACT_PRESIGN_SECONDS = 900;

export interface ArtifactOptions {
  pool: DatabasePool;
  /** Undefined: no storage configured; uploads and downloads are refused. */
  storage: StorageExtensionPoint | undefined;
  logger: Logger;
  retentionDays: number;
  maxSizeBytes: number;
  maxPerRun: number;
}

export interface AgentRef {
  agentId: string;
}

export const artifactObjectKey = (org: string, runId: string, digestHex: string): string => `artifacts/${org}/${runId}/${digestHex}.tar.gz`;
export const artifactTempKey = (org: string, runId: string, uploadId: string): string => `artifacts/${org}/${runId}/tmp/${uploadId}`;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const ArtifactRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  run_id: Type.String(),
  job_id: Nullable(Type.String()),
  name: Type.String(),
  digest: Type.String(),
  size_bytes: Type.Number(),
  file_count: Type.Number(),
  object_key: Type.String(),
  created_at: Type.String(),
  expires_at: Type.String(),
});
export type ArtifactRow = Static<typeof ArtifactRow>;

const ROW_COLUMNS = sql.fragment`id::text AS id, org_id, run_id::text AS run_id, job_id::text AS job_id, name, digest, size_bytes::float8 AS size_bytes,
  file_count, object_key, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires_at`;

export function infoOf(row: ArtifactRow): ArtifactInfo {
  return { name: row.name, digest: row.digest, sizeBytes: row.size_bytes, fileCount: row.file_count, runId: row.run_id, createdAt: row.created_at, expiresAt: row.expires_at };
}

function storageOf(options: ArtifactOptions): StorageExtensionPoint {
  if (options.storage === undefined) {
    throw new UnavailableError('SVC_ERR_ARTIFACT_NOT_CONFIGURED', 'no storage is configured on this orchestrator (SVC_STORAGE_TYPE); artifacts cannot be stored or read');
  }
  return options.storage;
}

async function artifactJob(options: ArtifactOptions, agent: AgentRef, jobId: string): Promise<AgentJobRow> {
  return activeJobOf(options.pool, agent.agentId, jobId, { area: 'ARTIFACT' });
}

const Count = Type.Object({ n: Type.Number() });
const IdRow = Type.Object({ id: Type.String() });

/** `artifact.upload.request`: checks name and limits, reserves the name, hands out a PUT URL. */
export async function requestUpload(options: ArtifactOptions, agent: AgentRef, message: Static<typeof ArtifactUploadRequest>): Promise<{ uploadUrl: string }> {
  const job = await artifactJob(options, agent, message.jobId);
  const name = checkArtifactName(message.name);
  const storage = storageOf(options);
  const org = checkOrg(job.org_id);
  if (message.sizeBytes > options.maxSizeBytes) {
    throw new InputError(
      'SVC_ERR_ARTIFACT_TOO_LARGE',
      `artifact ${JSON.stringify(name)} is ${message.sizeBytes} bytes packed; the limit is ${options.maxSizeBytes} bytes (artifacts.maxSizeBytes): upload fewer files or split it`,
    );
  }
  const retentionDays = message.retentionDays ?? options.retentionDays;
  if (retentionDays > options.retentionDays) {
    throw new InputError(
      'SVC_ERR_ARTIFACT_RETENTION_INVALID',
      `retentionDays ${retentionDays} is longer than this orchestrator keeps artifacts (${options.retentionDays} days, artifacts.retentionDays); ask for ${options.retentionDays} or fewer`,
    );
  }
  const uploadId = randomUUID();
  const tempKey = artifactTempKey(org, job.run_id, uploadId);
  await options.pool.transaction(async (tx) => {
    // One run's uploads are serialised here so the count limit and the name check cannot race.
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${`svc-artifacts:${job.run_id}`}, 0))`);
    await checkNameFree(tx, job, name);
    // A retried job (or a second upload of the same name by the same job) replaces its own pending upload.
    const replaced = await tx.any(sqlTyped(Type.Object({ temp_key: Type.String() }))`
      DELETE FROM run_artifact_uploads WHERE run_id = ${job.run_id} AND name = ${name} AND job_id = ${job.job_id} RETURNING temp_key`);
    for (const r of replaced) await storage.delete(r.temp_key);
    const counted = await tx.one(sqlTyped(Count)`
      SELECT ((SELECT count(*) FROM run_artifacts WHERE run_id = ${job.run_id} AND NOT (name = ${name} AND job_id = ${job.job_id}))
            + (SELECT count(*) FROM run_artifact_uploads WHERE run_id = ${job.run_id}))::int AS n`);
    if (counted.n >= options.maxPerRun) {
      throw new InputError(
        'SVC_ERR_ARTIFACT_LIMIT',
        `run ${job.run_id} already has ${counted.n} artifacts (stored or uploading); the limit is ${options.maxPerRun} per run (artifacts.maxPerRun): pack files into fewer artifacts`,
      );
    }
    const inserted = await tx.maybeOne(sqlTyped(IdRow)`
      INSERT INTO run_artifact_uploads (id, org_id, run_id, job_id, request_id, name, digest, size_bytes, file_count, retention_days, temp_key)
      VALUES (${uploadId}, ${org}, ${job.run_id}, ${job.job_id}, ${message.requestId}, ${name}, ${message.digest}, ${message.sizeBytes}, ${message.fileCount}, ${retentionDays}, ${tempKey})
      ON CONFLICT DO NOTHING RETURNING id::text AS id`);
    if (inserted === null) {
      throw new InputError('SVC_ERR_ARTIFACT_REQUEST_DUPLICATE', `request id ${message.requestId} was already used for an artifact upload of job ${job.job_id}; use a new request id`);
    }
  });
  const uploadUrl = await storage.presign({ method: 'PUT', key: tempKey, expiresInSeconds: ARTIFACT_PRESIGN_SECONDS });
  return { uploadUrl };
}

/** A name belongs to the first job of the run that used it; only that job may store it again. */
async function checkNameFree(tx: CommonQueryMethods, job: AgentJobRow, name: string): Promise<void> {
  const taken = await tx.maybeOne(sqlTyped(IdRow)`
    SELECT id::text AS id FROM run_artifacts WHERE run_id = ${job.run_id} AND name = ${name} AND job_id IS DISTINCT FROM ${job.job_id}::uuid
    UNION ALL
    SELECT id::text AS id FROM run_artifact_uploads WHERE run_id = ${job.run_id} AND name = ${name} AND job_id <> ${job.job_id}::uuid
    LIMIT 1`);
  if (taken !== null) {
    throw new InputError(
      'SVC_ERR_ARTIFACT_EXISTS',
      `run ${job.run_id} already has an artifact named ${JSON.stringify(name)} from another job; artifact names are unique within a run (add the job or matrix values to the name)`,
    );
  }
}

const UploadRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  run_id: Type.String(),
  name: Type.String(),
  digest: Type.String(),
  size_bytes: Type.Number(),
  file_count: Type.Number(),
  retention_days: Type.Number(),
  temp_key: Type.String(),
});

/** `artifact.commit.request`: the uploaded object must exist with the announced size; then it becomes the artifact. */
export async function commitUpload(options: ArtifactOptions, agent: AgentRef, message: Static<typeof ArtifactCommitRequest>): Promise<ArtifactInfo> {
  const job = await artifactJob(options, agent, message.jobId);
  const storage = storageOf(options);
  const upload = await options.pool.maybeOne(sqlTyped(UploadRow)`
    SELECT id::text AS id, org_id, run_id::text AS run_id, name, digest, size_bytes::float8 AS size_bytes, file_count, retention_days, temp_key
    FROM run_artifact_uploads WHERE job_id = ${job.job_id} AND request_id = ${message.requestId}`);
  if (upload === null) {
    throw new NotFoundError('SVC_ERR_ARTIFACT_UPLOAD_UNKNOWN', `no pending artifact upload for request ${message.requestId} of job ${job.job_id} (never requested, already committed, or expired); upload again`);
  }
  const discard = async (): Promise<void> => {
    await options.pool.query(sql.unsafe`DELETE FROM run_artifact_uploads WHERE id = ${upload.id}`);
    await storage.delete(upload.temp_key);
  };
  const head = await storage.head(upload.temp_key);
  if (head === null) {
    throw new NotFoundError('SVC_ERR_ARTIFACT_UPLOAD_MISSING', `nothing was uploaded for artifact ${JSON.stringify(upload.name)}; PUT the tarball to the URL from artifact.upload.response first`);
  }
  if (head.size !== upload.size_bytes) {
    await discard();
    throw new InputError('SVC_ERR_ARTIFACT_SIZE_MISMATCH', `uploaded object is ${head.size} bytes but the upload request said ${upload.size_bytes}; the upload was discarded, upload again`);
  }
  const hex = upload.digest.slice('sha256:'.length);
  const objectKey = artifactObjectKey(upload.org_id, upload.run_id, hex);
  const { row, orphaned } = await options.pool.transaction(async (tx) => {
    const claimed = await tx.maybeOne(sqlTyped(IdRow)`DELETE FROM run_artifact_uploads WHERE id = ${upload.id} RETURNING id::text AS id`);
    if (claimed === null) return { row: null, orphaned: [] as string[] };
    // The same job storing the name again (a retry) replaces its earlier artifact.
    const old = await tx.any(sqlTyped(Type.Object({ object_key: Type.String() }))`
      DELETE FROM run_artifacts WHERE run_id = ${upload.run_id} AND name = ${upload.name} RETURNING object_key`);
    const inserted = await tx.one(sqlTyped(ArtifactRow)`
      INSERT INTO run_artifacts (id, org_id, run_id, job_id, name, digest, size_bytes, file_count, object_key, expires_at)
      VALUES (${randomUUID()}, ${upload.org_id}, ${upload.run_id}, ${job.job_id}, ${upload.name}, ${upload.digest}, ${upload.size_bytes}, ${upload.file_count}, ${objectKey},
              clock_timestamp() + make_interval(days => ${upload.retention_days}))
      RETURNING ${ROW_COLUMNS}`);
    await storage.copy(upload.temp_key, objectKey);
    return { row: inserted, orphaned: old.map((o) => o.object_key).filter((k) => k !== objectKey) };
  });
  await storage.delete(upload.temp_key);
  if (row === null) {
    throw new NotFoundError('SVC_ERR_ARTIFACT_UPLOAD_UNKNOWN', `artifact upload for request ${message.requestId} expired before it was committed; upload again`);
  }
  for (const key of orphaned) await deleteIfUnreferenced(options.pool, storage, key);
  options.logger.info({ runId: row.run_id, jobId: job.job_id, name: row.name, digest: row.digest, size: row.size_bytes }, 'artifact committed');
  return infoOf(row);
}

/** Objects are content-addressed within a run, so two names may share one; delete only the last user's. */
export async function deleteIfUnreferenced(pool: DatabasePool, storage: StorageExtensionPoint, objectKey: string): Promise<boolean> {
  const used = await pool.maybeOne(sqlTyped(IdRow)`SELECT id::text AS id FROM run_artifacts WHERE object_key = ${objectKey} LIMIT 1`);
  if (used !== null) return false;
  await storage.delete(objectKey);
  return true;
}

const RunIdRow = Type.Object({ run_id: Type.String() });

/** The run whose `workflow_complete` event triggered `runId`; null when it was triggered otherwise. */
export async function upstreamRunOf(pool: DatabasePool, runId: string): Promise<string | null> {
  const row = await pool.maybeOne(sqlTyped(RunIdRow)`
    SELECT e.run_id::text AS run_id FROM runs r JOIN internal_events e ON e.id = r.triggering_event_id
    WHERE r.id = ${runId} AND e.name = 'workflow_complete' AND e.org_id = r.org_id AND e.run_id IS NOT NULL`);
  return row?.run_id ?? null;
}

/** A live (not expired) artifact of `runId` in `orgId`; null when none. */
export async function findArtifact(pool: DatabasePool, orgId: string, runId: string, name: string): Promise<ArtifactRow | null> {
  return pool.maybeOne(sqlTyped(ArtifactRow)`
    SELECT ${ROW_COLUMNS} FROM run_artifacts
    WHERE org_id = ${orgId} AND run_id = ${runId} AND name = ${name} AND expires_at > clock_timestamp()`);
}

/** `artifact.download.request`: the artifact of this run (or of the upstream run) and a GET URL. */
export async function answerDownload(
  options: ArtifactOptions,
  agent: AgentRef,
  message: Static<typeof ArtifactDownloadRequest>,
): Promise<{ artifact: ArtifactInfo; downloadUrl: string }> {
  const job = await artifactJob(options, agent, message.jobId);
  const name = checkArtifactName(message.name);
  const storage = storageOf(options);
  const from = message.from;
  let row: ArtifactRow | null = null;
  if (from !== 'upstream') row = await findArtifact(options.pool, job.org_id, job.run_id, name);
  let upstream: string | null = null;
  if (row === null && from !== 'current') {
    upstream = await upstreamRunOf(options.pool, job.run_id);
    if (upstream === null && from === 'upstream') {
      throw new NotFoundError('SVC_ERR_ARTIFACT_NO_UPSTREAM', `run ${job.run_id} was not triggered by another run's completion (workflowComplete), so it has no upstream artifacts`);
    }
    if (upstream !== null) row = await findArtifact(options.pool, job.org_id, upstream, name);
  }
  if (row === null) {
    const where = from === 'upstream' ? `upstream run ${upstream}` : upstream === null ? `run ${job.run_id}` : `run ${job.run_id} or its upstream run ${upstream}`;
    throw new NotFoundError('SVC_ERR_ARTIFACT_NOT_FOUND', `${where} has no artifact named ${JSON.stringify(name)} (never uploaded, or past its retention)`);
  }
  if ((await storage.head(row.object_key)) === null) {
    throw new NotFoundError('SVC_ERR_ARTIFACT_OBJECT_MISSING', `artifact ${JSON.stringify(name)} of run ${row.run_id} is recorded but its object is gone from storage; upload it again`);
  }
  const downloadUrl = await storage.presign({ method: 'GET', key: row.object_key, expiresInSeconds: ARTIFACT_PRESIGN_SECONDS });
  return { artifact: infoOf(row), downloadUrl };
}
