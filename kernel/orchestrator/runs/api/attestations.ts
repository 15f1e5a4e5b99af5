// A run's provenance attestations for the dashboard (relayed as `run.detail.request` and
// `run.attestation.request`): each attested file with its signature and a verdict computed here,
// against this orchestrator's own keys, by the verifier `svc verify-attestation` and the public
// `/v1/verify-attestation` route use (identity/verify-attestation.ts, with the identity service's
// trust: the issuer, the served JWKS and the revoked kids). Only runs of the asking org are read.
import { Type, type Static } from 'typebox';
import type { AttestationVerification, RunAttestation } from '../../../../schemas/wire/relay.ts';
import { MAX_RUN_ATTESTATIONS } from '../../../../schemas/wire/relay.ts';
import { AttestationBundle } from '../../../../schemas/identity.ts';
import { compileSchema } from '../../../../schemas/validate.ts';
import { ConflictError, NotFoundError } from '../../../../core/errors.ts';
import { sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { bundleFileName } from '../../identity/attestations.ts';
import { verifyAttestationBundle, type VerifyTrust } from '../../identity/verify-attestation.ts';
import { Nullable } from '../run-record.ts';
import { findRun } from './show.ts';

const checkBundle = compileSchema(AttestationBundle);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The trust an online verdict is checked against; undefined when this orchestrator has no issuer. */
export type AttestationTrust = () => Promise<VerifyTrust | undefined>;

const Row = Type.Object({
  id: Type.String(),
  job_id: Type.String(),
  job: Type.String(),
  artifact_name: Type.String(),
  artifact_sha256: Type.String(),
  status: Type.String(),
  attestation_origin: Nullable(Type.String()),
  defer_code: Nullable(Type.String()),
  created_at: Type.String(),
  bundle: Type.Unknown(),
});
type Row = Static<typeof Row>;

const ISSUER_OFF: AttestationVerification = {
  badge: 'not_verifiable',
  reason: 'issuer_off',
  message: 'provenance signing is off on this orchestrator (SVC_ORCHESTRATOR_PROVENANCE_ISSUER is not set): there are no keys to verify against',
};

/** The verdict of one stored attestation, as `svc verify-attestation --issuer` would give it for the attested file. */
export async function verificationOf(row: Pick<Row, 'status' | 'defer_code' | 'bundle' | 'artifact_name' | 'artifact_sha256'>, trust: VerifyTrust | undefined): Promise<AttestationVerification> {
  if (row.status !== 'fulfilled' || row.bundle === null) {
    return { badge: 'not_verifiable', reason: 'pending', message: `the signature is deferred (${row.defer_code ?? 'unavailable'}); it is signed once a key is ready` };
  }
  if (trust === undefined) return ISSUER_OFF;
  const verdict = await verifyAttestationBundle({ bundle: row.bundle, artifactSha256: row.artifact_sha256, artifactName: row.artifact_name, trust });
  if (verdict.ok) return { badge: 'verified', reason: null, message: `signed by ${verdict.issuer} key ${verdict.kid} [${verdict.attestationOrigin}]` };
  return { badge: verdict.reason === 'key_revoked' ? 'revoked_key' : 'not_verifiable', reason: verdict.reason, message: verdict.message.slice(0, 2000) };
}

function kidOf(bundle: unknown): string | null {
  const kid = (bundle as { kid?: unknown } | null)?.kid;
  return typeof kid === 'string' ? kid : null;
}

/** The attestations of a run of the asking org, by subject then creation, each with its verdict. */
export async function listRunAttestations(pool: DatabasePool, trust: AttestationTrust, orgId: string, runId: string): Promise<RunAttestation[]> {
  return attestationsOfRun(pool, trust, (await findRun(pool, orgId, runId)).id);
}

/** The attestations of a run already checked to be the caller's. */
export async function attestationsOfRun(pool: DatabasePool, trust: AttestationTrust, runId: string): Promise<RunAttestation[]> {
  const rows = await pool.any(sqlTyped(Row)`
    select a.id::text as id, a.job_id::text as job_id, j.display_name as job, a.artifact_name, a.artifact_sha256, a.status,
      a.attestation_origin, a.defer_code, to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at, a.bundle
    from attestations a join jobs j on j.id = a.job_id
    where a.run_id = ${runId} order by a.artifact_name, a.created_at, a.id limit ${MAX_RUN_ATTESTATIONS}`);
  if (rows.length === 0) return [];
  // One key read for the whole list: every verdict is against the same keys.
  const against = await trust();
  const out: RunAttestation[] = [];
  for (const row of rows) {
    out.push({
      attestationId: row.id,
      jobId: row.job_id,
      job: row.job,
      subject: row.artifact_name,
      sha256: row.artifact_sha256,
      bundleName: bundleFileName(row.artifact_name),
      status: row.status === 'fulfilled' ? 'fulfilled' : 'pending',
      origin: row.attestation_origin,
      kid: kidOf(row.bundle),
      createdAt: row.created_at,
      verification: await verificationOf(row, against),
    });
  }
  return out;
}

/** The signed bundle of one attestation of the run, and its file name. */
export async function readRunAttestationBundle(pool: DatabasePool, orgId: string, runId: string, attestationId: string): Promise<{ fileName: string; bundle: AttestationBundle }> {
  const run = await findRun(pool, orgId, runId);
  const missing = new NotFoundError('SVC_ERR_RUNS_ATTESTATION_NOT_FOUND', `run ${run.id} has no attestation ${attestationId.slice(0, 80)}`);
  if (!UUID.test(attestationId)) throw missing;
  const row = await pool.maybeOne(sqlTyped(Type.Object({ artifact_name: Type.String(), status: Type.String(), bundle: Type.Unknown() }))`
    select artifact_name, status, bundle from attestations where id = ${attestationId}::uuid and run_id = ${run.id}`);
  if (row === null) throw missing;
  if (row.status !== 'fulfilled' || !checkBundle.check(row.bundle)) {
    throw new ConflictError('SVC_ERR_RUNS_ATTESTATION_PENDING', `attestation ${attestationId} is not signed yet (deferred); its bundle exists once a key is ready`);
  }
  return { fileName: bundleFileName(row.artifact_name), bundle: row.bundle };
}
