// Provenance attestations (spec "Identity token" attestation claims, "Step API"): a DSSE envelope
// over an in-toto statement, signed by the orchestrator's key, plus the identity token bound to
// it. When a live token cannot be minted the statement is frozen (with its SHA-256) and signed
// later by fulfilDeferredAttestations (origin `deferred`, or `offline-backfill` for an operator).
import { randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import {
  ATTESTATION_BUNDLE_MEDIA_TYPE,
  AttestationBundle,
  IN_TOTO_PAYLOAD_TYPE,
  type AttestationOrigin,
} from '../../../schemas/identity.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { InputError, messageOf } from '../../../core/errors.ts';
import { isUuid, loadRunJob, type RunJobRow } from './claims.ts';
import { preAuthEncoding, provenanceStatement, rawToDerSignature, sha256Hex, type Artifact } from './dsse.ts';
import type { Minter } from './mint.ts';
import { verifyTimestampToken, type Timestamper } from './timestamp.ts';

/** Audience of the identity token carried inside a bundle. */
export const ATTESTATION_AUDIENCE = 'svc-attestation';
/** Serialized size cap of a step's own predicate fields. */
export const STEP_PARAMETERS_MAX_BYTES = 64 * 1024;
const checkBundle = compileSchema(AttestationBundle);

export type CreateAttestationResult =
  | { bundle: AttestationBundle; fileName: string; attestationId: string }
  | { deferred: true; code: string; attestationId: string; statementHash: string };

export interface AttestationDeps {
  pool: DatabasePool;
  custody: CustodyExtensionPoint;
  minter: Minter;
  /** The configured RFC 3161 TSA (SVC_ORCHESTRATOR_TIMESTAMP_URL); absent: no timestamps. */
  timestamper?: Timestamper;
  logger?: { warn(object: object, message: string): void };
}

export function checkArtifact(artifact: unknown): Artifact {
  const a = artifact as Partial<Artifact> | null;
  if (typeof a?.name !== 'string' || a.name.length === 0 || a.name.length > 1000 || /[\u0000-\u001f\u007f]/.test(a.name)) {
    throw new InputError('SVC_ERR_IDENTITY_ARTIFACT', 'artifact.name must be 1 to 1000 printable characters');
  }
  if (typeof a.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(a.sha256)) {
    throw new InputError('SVC_ERR_IDENTITY_ARTIFACT', 'artifact.sha256 must be 64 lowercase hex characters');
  }
  return { name: a.name, sha256: a.sha256 };
}

function checkStepParameters(parameters: unknown): Record<string, unknown> | undefined {
  if (parameters === undefined) return undefined;
  if (parameters === null || typeof parameters !== 'object' || Array.isArray(parameters)) {
    throw new InputError('SVC_ERR_IDENTITY_PREDICATE', 'the step predicate must be a JSON object');
  }
  const size = Buffer.byteLength(JSON.stringify(parameters), 'utf8');
  if (size > STEP_PARAMETERS_MAX_BYTES) {
    throw new InputError('SVC_ERR_IDENTITY_PREDICATE', `the step predicate is ${size} bytes of JSON; at most ${STEP_PARAMETERS_MAX_BYTES} are recorded`);
  }
  return parameters as Record<string, unknown>;
}

/** The node that ran the job, as the frozen statement recorded it (deferred signing elsewhere). */
function recordedOrchestratorId(statementText: string): string | undefined {
  try {
    const value = (JSON.parse(statementText) as { predicate?: { buildDefinition?: { internalParameters?: { orchestrator_id?: unknown } } } }).predicate?.buildDefinition?.internalParameters?.orchestrator_id;
    return typeof value === 'string' && value !== '' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** `<artifact>.svc.json` (the artifact's base name). */
export function bundleFileName(artifactName: string): string {
  const base = artifactName.split(/[\\/]/).pop() || 'artifact';
  return `${base}.svc.json`;
}

async function signStatement(deps: AttestationDeps, row: RunJobRow, statementText: string, origin: AttestationOrigin): Promise<AttestationBundle> {
  const statementHash = sha256Hex(statementText);
  const token = await deps.minter.signFor(row, ATTESTATION_AUDIENCE, origin, origin === 'live' ? null : statementHash, recordedOrchestratorId(statementText));
  const payload = Buffer.from(statementText, 'utf8');
  // DER, not the JOSE raw form: what DSSE verifiers outside this project read.
  const sig = rawToDerSignature(await deps.custody.sign(preAuthEncoding(IN_TOTO_PAYLOAD_TYPE, payload), token.kid));
  const stamped = await timestampOf(deps, sig, statementHash);
  return {
    mediaType: ATTESTATION_BUNDLE_MEDIA_TYPE,
    issuer: deps.minter.issuer,
    kid: token.kid,
    statementHash,
    attestationOrigin: origin,
    identityToken: token.token,
    dsseEnvelope: {
      payloadType: IN_TOTO_PAYLOAD_TYPE,
      payload: payload.toString('base64'),
      signatures: [{ keyid: token.kid, sig: Buffer.from(sig).toString('base64') }],
    },
    ...stamped,
  };
}

/**
 * The TSA's token over the signature bytes. A TSA that is down or answers wrongly does not stop
 * the attestation: it is made untimestamped, says why (`timestampError`), and is logged, because
 * only a compromise revoke makes the difference (an untimestamped signature then stops verifying).
 */
async function timestampOf(deps: AttestationDeps, sig: Uint8Array, statementHash: string): Promise<Pick<AttestationBundle, 'timestampVerificationData' | 'timestampError'>> {
  if (!deps.timestamper) return {};
  try {
    const { token } = await deps.timestamper.stamp(sig);
    return { timestampVerificationData: { rfc3161Timestamps: [{ signedTimestamp: token.toString('base64') }] } };
  } catch (error) {
    const reason = messageOf(error).slice(0, 1900);
    deps.logger?.warn({ statementHash, tsa: deps.timestamper.url }, `attestation made without a signed timestamp: ${reason}`);
    return { timestampError: reason };
  }
}

/** Listing columns: when the TSA dated the signature, or why it gave no timestamp. */
async function timestampColumns(deps: AttestationDeps, bundle: AttestationBundle): Promise<{ at: string | null; error: string | null }> {
  const token = bundle.timestampVerificationData?.rfc3161Timestamps[0]?.signedTimestamp;
  if (!token || !deps.timestamper) return { at: null, error: bundle.timestampError ?? null };
  const sig = Buffer.from(bundle.dsseEnvelope.signatures[0]?.sig ?? '', 'base64');
  const verdict = verifyTimestampToken(Buffer.from(token, 'base64'), sig, deps.timestamper.trust);
  return verdict.ok ? { at: verdict.genTime.toISOString(), error: null } : { at: null, error: verdict.message };
}

export interface CreateAttestationRequest {
  jobId: string;
  agentId: string;
  artifact: Artifact;
  /** The step's own predicate fields. */
  parameters?: Record<string, unknown>;
}

export async function createAttestation(deps: AttestationDeps, request: CreateAttestationRequest): Promise<CreateAttestationResult> {
  const artifact = checkArtifact(request.artifact);
  const stepParameters = checkStepParameters(request.parameters);
  const row = await deps.minter.ownedJob(request.jobId, request.agentId);
  const statement = provenanceStatement(row, artifact, {
    issuer: deps.minter.issuer,
    orchestratorId: deps.minter.orchestratorId,
    ...(stepParameters === undefined ? {} : { stepParameters }),
  });
  // Serialized once: the frozen bytes are what a later signature covers.
  const statementText = JSON.stringify(statement);
  const statementHash = sha256Hex(statementText);
  const id = randomUUID();
  const signed = await deps.minter.deferring(() => signStatement(deps, row, statementText, 'live'));
  if ('deferred' in signed) {
    await deps.pool.query(sql.unsafe`
      INSERT INTO attestations (id, run_id, job_id, artifact_name, artifact_sha256, statement, statement_hash, status, defer_code)
      VALUES (${id}, ${row.run_id}, ${row.job_id}, ${artifact.name}, ${artifact.sha256}, ${statementText}, ${statementHash}, 'pending', ${signed.code})`);
    return { deferred: true, code: signed.code, attestationId: id, statementHash };
  }
  const stamp = await timestampColumns(deps, signed);
  await deps.pool.query(sql.unsafe`
    INSERT INTO attestations (id, run_id, job_id, artifact_name, artifact_sha256, statement, statement_hash, status, attestation_origin, bundle, fulfilled_at,
                              timestamped_at, timestamp_error)
    VALUES (${id}, ${row.run_id}, ${row.job_id}, ${artifact.name}, ${artifact.sha256}, ${statementText}, ${statementHash}, 'fulfilled', 'live',
            ${JSON.stringify(signed)}::jsonb, now(), ${stamp.at}::timestamptz, ${stamp.error})`);
  return { bundle: signed, fileName: bundleFileName(artifact.name), attestationId: id };
}

export interface FulfilResult {
  fulfilled: number;
  /** Pending statements left (a deferral stops the sweep). */
  remaining: number;
  deferredCode?: string;
}

/** Sign frozen statements. Each is claimed (SKIP LOCKED + a one-minute claim) so nodes sweeping at once never double-sign. */
export async function fulfilDeferredAttestations(
  deps: AttestationDeps,
  options: { origin?: 'deferred' | 'offline-backfill'; limit?: number } = {},
): Promise<FulfilResult> {
  const origin = options.origin ?? 'deferred';
  const limit = Math.max(1, Math.min(options.limit ?? 100, 1000));
  let fulfilled = 0;
  let deferredCode: string | undefined;
  for (let i = 0; i < limit; i += 1) {
    const pending = await deps.pool.maybeOne(sqlTyped(Type.Object({ id: Type.String(), job_id: Type.String(), statement: Type.String() }))`
      UPDATE attestations SET claimed_at = now()
      WHERE id = (SELECT id FROM attestations
                  WHERE status = 'pending' AND (claimed_at IS NULL OR claimed_at < now() - interval '1 minute')
                  ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING id::text AS id, job_id::text AS job_id, statement`);
    if (!pending) break;
    const row = await loadRunJob(deps.pool, pending.job_id);
    if (!row) throw new InputError('SVC_ERR_IDENTITY_ATTESTATION_ORPHAN', `attestation ${pending.id} has no job row`);
    const signed = await deps.minter.deferring(() => signStatement(deps, row, pending.statement, origin));
    if ('deferred' in signed) {
      deferredCode = signed.code;
      await deps.pool.query(sql.unsafe`UPDATE attestations SET claimed_at = NULL, defer_code = ${signed.code} WHERE id = ${pending.id}`);
      break;
    }
    const stamp = await timestampColumns(deps, signed);
    await deps.pool.query(sql.unsafe`
      UPDATE attestations SET status = 'fulfilled', attestation_origin = ${origin}, bundle = ${JSON.stringify(signed)}::jsonb, fulfilled_at = now(), claimed_at = NULL,
                              timestamped_at = ${stamp.at}::timestamptz, timestamp_error = ${stamp.error}
      WHERE id = ${pending.id} AND status = 'pending'`);
    fulfilled += 1;
  }
  const remaining = await deps.pool.oneFirst(sqlTyped(Type.Object({ n: Type.Number() }))`SELECT count(*)::int AS n FROM attestations WHERE status = 'pending'`);
  return { fulfilled, remaining, ...(deferredCode === undefined ? {} : { deferredCode }) };
}

/** The bundle of a fulfilled attestation, or undefined while it is pending / unknown. */
export async function attestationBundle(pool: DatabasePool, id: string): Promise<AttestationBundle | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  const row = await pool.maybeOne(sqlTyped(Type.Object({ bundle: Type.Union([Type.Unknown(), Type.Null()]) }))`SELECT bundle FROM attestations WHERE id = ${id}::uuid`);
  if (!row || row.bundle === null) return undefined;
  return checkBundle.check(row.bundle) ? row.bundle : undefined;
}

export const AttestationRow = Type.Object({
  id: Type.String(),
  run_id: Type.String(),
  job_id: Type.String(),
  artifact_name: Type.String(),
  artifact_sha256: Type.String(),
  statement_hash: Type.String(),
  status: Type.String(),
  attestation_origin: Type.Union([Type.String(), Type.Null()]),
  defer_code: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
  fulfilled_at: Type.Union([Type.String(), Type.Null()]),
  /** The TSA's genTime for the signature, or why a configured TSA gave none (both null without a TSA). */
  timestamped_at: Type.Union([Type.String(), Type.Null()]),
  timestamp_error: Type.Union([Type.String(), Type.Null()]),
});
export type AttestationRow = Static<typeof AttestationRow>;

/** Newest first; `runId` and `status` narrow it. */
export async function listAttestations(pool: DatabasePool, filter: { runId?: string; status?: 'pending' | 'fulfilled'; limit?: number } = {}): Promise<AttestationRow[]> {
  const limit = Math.max(1, Math.min(filter.limit ?? 100, 1000));
  const run = filter.runId === undefined ? sql.fragment`TRUE` : sql.fragment`run_id = ${filter.runId}::uuid`;
  const status = filter.status === undefined ? sql.fragment`TRUE` : sql.fragment`status = ${filter.status}`;
  const rows = await pool.any(sqlTyped(AttestationRow)`
    SELECT id::text AS id, run_id::text AS run_id, job_id::text AS job_id, artifact_name, artifact_sha256, statement_hash, status,
           attestation_origin, defer_code, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
           to_char(fulfilled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS fulfilled_at,
           to_char(timestamped_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS timestamped_at, timestamp_error
    FROM attestations WHERE ${run} AND ${status} ORDER BY created_at DESC, id LIMIT ${limit}`);
  return [...rows];
}

/** One attestation's row (pending or fulfilled), or undefined. */
export async function listAttestationById(pool: DatabasePool, id: string): Promise<AttestationRow | undefined> {
  if (!isUuid(id)) return undefined;
  const row = await pool.maybeOne(sqlTyped(AttestationRow)`
    SELECT id::text AS id, run_id::text AS run_id, job_id::text AS job_id, artifact_name, artifact_sha256, statement_hash, status,
           attestation_origin, defer_code, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
           to_char(fulfilled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS fulfilled_at,
           to_char(timestamped_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS timestamped_at, timestamp_error
    FROM attestations WHERE id = ${id}::uuid`);
  return row ?? undefined;
}
