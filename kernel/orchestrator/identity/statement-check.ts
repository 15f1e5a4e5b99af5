// The statement inside a verified envelope, read the same way for both bundle formats (svc's
// own and the Sigstore bundle): an in-toto v1 statement with an SLSA provenance v1 predicate
// whose first subject is the artifact the caller holds.
import { messageOf } from '../../../core/errors.ts';
import { IN_TOTO_STATEMENT_TYPE, SLSA_PROVENANCE_TYPE, type AttestationFailureReason } from '../../../schemas/identity.ts';
import type { ProvenanceStatement } from './dsse.ts';

export type CheckedStatement =
  | { ok: true; statement: ProvenanceStatement; subject: { name: string; digest: { sha256: string } }; run: Record<string, unknown> }
  | { ok: false; reason: AttestationFailureReason; message: string };

/** Parses `payload` and checks its shape and its subject against the artifact. */
export function checkStatement(payload: Buffer, artifactSha256: string, artifactName: string | undefined): CheckedStatement {
  let statement: ProvenanceStatement;
  try {
    statement = JSON.parse(payload.toString('utf8')) as ProvenanceStatement;
  } catch (error) {
    return { ok: false, reason: 'statement_invalid', message: `statement is not JSON: ${messageOf(error)}` };
  }
  const subject = Array.isArray(statement?.subject) ? statement.subject[0] : undefined;
  const run = statement?.predicate?.buildDefinition?.internalParameters;
  if (statement?._type !== IN_TOTO_STATEMENT_TYPE || statement.predicateType !== SLSA_PROVENANCE_TYPE || !subject || typeof subject.digest?.sha256 !== 'string' || !run) {
    return { ok: false, reason: 'statement_invalid', message: 'statement is not an in-toto v1 statement with an SLSA provenance v1 predicate' };
  }
  if (subject.digest.sha256 !== artifactSha256.toLowerCase()) {
    return { ok: false, reason: 'artifact_mismatch', message: `artifact sha256 ${artifactSha256} is not the attested ${subject.digest.sha256}` };
  }
  if (artifactName !== undefined && subject.name !== artifactName) {
    return { ok: false, reason: 'artifact_mismatch', message: `artifact name ${artifactName} is not the attested ${subject.name}` };
  }
  return { ok: true, statement, subject: subject as { name: string; digest: { sha256: string } }, run: run as Record<string, unknown> };
}
