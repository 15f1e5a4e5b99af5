// What `svc runs artifacts` and `svc runs download` ask through the relay: a run's artifacts, and
// one artifact's bytes in chunks that fit a relay frame (the CLI reaches neither this
// orchestrator nor its storage, only the relay). The CLI checks the digest over the whole file.
import type { Readable } from 'node:stream';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { checkArtifactName } from '../../../core/artifact-names.ts';
import { InputError, NotFoundError, UnavailableError } from '../../../core/errors.ts';
import type { ArtifactInfo } from '../../../schemas/wire/agent.ts';
import { findRun } from '../runs/api/show.ts';
import { ArtifactRow, findArtifact, infoOf } from './store.ts';

/** Raw bytes per chunk: base64 makes it 4/3 larger, well under the relay's 3.5 MiB answer limit. */
export const ARTIFACT_CHUNK_BYTES = 2 * 1024 * 1024;

/** The live artifacts of a run of `orgId`, by name; SVC_ERR_RUNS_NOT_FOUND for a run of another org. */
export async function listRunArtifacts(pool: DatabasePool, orgId: string, runId: string): Promise<ArtifactInfo[]> {
  const run = await findRun(pool, orgId, runId);
  const rows = await pool.any(sqlTyped(ArtifactRow)`
    SELECT id::text AS id, org_id, run_id::text AS run_id, job_id::text AS job_id, name, digest, size_bytes::float8 AS size_bytes, file_count, object_key,
      to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
      to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS expires_at
    FROM run_artifacts WHERE run_id = ${run.id} AND org_id = ${orgId} AND expires_at > clock_timestamp() ORDER BY name`);
  return rows.map(infoOf);
}

export interface ArtifactChunk {
  artifact: ArtifactInfo;
  offset: number;
  /** Base64 of up to ARTIFACT_CHUNK_BYTES bytes starting at `offset`. */
  data: string;
  /** True when this chunk ends the object. */
  done: boolean;
}

/** Reads `[offset, offset + max)` of a stream, then stops reading it. */
async function readRange(stream: Readable, offset: number, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let position = 0;
  let taken = 0;
  try {
    for await (const raw of stream) {
      const chunk = raw as Buffer;
      const start = Math.max(0, offset - position);
      position += chunk.length;
      if (start >= chunk.length) continue;
      const piece = chunk.subarray(start, Math.min(chunk.length, start + (max - taken)));
      parts.push(piece);
      taken += piece.length;
      if (taken >= max) break;
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(parts);
}

export async function readArtifactChunk(
  pool: DatabasePool,
  storage: StorageExtensionPoint | undefined,
  orgId: string,
  runId: string,
  name: string,
  offset: number,
): Promise<ArtifactChunk> {
  const run = await findRun(pool, orgId, runId);
  checkArtifactName(name);
  if (storage === undefined) {
    throw new UnavailableError('SVC_ERR_ARTIFACT_NOT_CONFIGURED', 'no storage is configured on this orchestrator (SVC_STORAGE_TYPE); artifacts cannot be stored or read');
  }
  const row = await findArtifact(pool, orgId, run.id, name);
  if (row === null) throw new NotFoundError('SVC_ERR_ARTIFACT_NOT_FOUND', `run ${run.id} has no artifact named ${JSON.stringify(name)} (never uploaded, or past its retention)`);
  if (!Number.isSafeInteger(offset) || offset < 0 || offset > row.size_bytes) {
    throw new InputError('SVC_ERR_ARTIFACT_OFFSET_INVALID', `offset ${offset} is outside artifact ${JSON.stringify(name)} (0 to ${row.size_bytes} bytes)`);
  }
  let stream: Readable;
  try {
    stream = await storage.get(row.object_key);
  } catch (error) {
    throw new NotFoundError('SVC_ERR_ARTIFACT_OBJECT_MISSING', `artifact ${JSON.stringify(name)} of run ${run.id} is recorded but its object is gone from storage; upload it again`, { cause: error });
  }
  const bytes = await readRange(stream, offset, ARTIFACT_CHUNK_BYTES);
  const end = offset + bytes.length;
  return { artifact: infoOf(row), offset, data: bytes.toString('base64'), done: end >= row.size_bytes || bytes.length === 0 };
}
