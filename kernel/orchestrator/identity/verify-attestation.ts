// Attestation verification, offline (a trust-root file) or online (the live key table). Pure:
// the CLI and the orchestrator route share it. Each kind of tampering has its own reason.
import { verify as nodeVerify } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import {
  AttestationBundle,
  IN_TOTO_PAYLOAD_TYPE,
  type AttestationFailureReason,
  type Jwks,
  type VerifyAttestationResponse,
} from '../../../schemas/identity.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { messageOf } from '../../../core/errors.ts';
import { preAuthEncoding, sha256Hex } from './dsse.ts';
import { candidateKey, decideSignedTime, type KeyTrust } from './signed-time.ts';
import { checkStatement } from './statement-check.ts';
import { isSigstoreBundle, verifySigstoreBundle } from './sigstore-bundle.ts';

const checkBundle = compileSchema(AttestationBundle);
const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

export interface VerifyTrust extends KeyTrust {
  issuer: string;
  jwks: Jwks;
  /** Known-revoked kids (online only): reported as `key_revoked`. */
  revokedKids?: ReadonlySet<string>;
}

export interface VerifyAttestationInput {
  bundle: unknown;
  /** SHA-256 hex of the artifact bytes. */
  artifactSha256: string;
  artifactName?: string;
  trust: VerifyTrust;
}

const fail = (reason: AttestationFailureReason, message: string): VerifyAttestationResponse => ({ ok: false, reason, message });

function decodeB64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !B64.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}

const sameIssuer = (a: string, b: string) => a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

export async function verifyAttestationBundle(input: VerifyAttestationInput): Promise<VerifyAttestationResponse> {
  // Both forms are accepted, told apart by their media type (docs/provenance.md).
  if (isSigstoreBundle(input.bundle)) return verifySigstoreBundle(input);
  const parsed = checkBundle.validate(input.bundle);
  if (!parsed.ok) return fail('bundle_malformed', `not an attestation bundle: ${formatIssues(parsed.issues)}`);
  const bundle = parsed.value;
  const { trust } = input;
  if (!sameIssuer(bundle.issuer, trust.issuer)) return fail('issuer_mismatch', `bundle issuer ${bundle.issuer} is not the trusted issuer ${trust.issuer}`);
  const envelope = bundle.dsseEnvelope;
  if (envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE) return fail('payload_type_mismatch', `payload type ${envelope.payloadType} is not ${IN_TOTO_PAYLOAD_TYPE}`);
  const signature = envelope.signatures.find((s) => s.keyid === bundle.kid);
  if (!signature) return fail('signature_invalid', `no envelope signature carries keyid ${bundle.kid}`);
  // A key revoked with a compromise time stays a candidate: its signature's RFC 3161 time decides below (signed-time.ts).
  const key = candidateKey(bundle.kid, trust);
  if (!key.ok) return fail(key.reason, key.message);
  const jwk = key.jwk;

  const payload = decodeB64(envelope.payload);
  if (!payload) return fail('bundle_malformed', 'envelope payload is not base64');
  if (sha256Hex(payload) !== bundle.statementHash) return fail('statement_tampered', 'the statement does not hash to the bundle statementHash: it was altered');
  const sig = decodeB64(signature.sig);
  let valid = false;
  // Bundles carry DER (what outside DSSE verifiers read); 64 bytes is the raw r‖s form of
  // bundles made before that, which a DER sequence of P-256 integers never is.
  if (sig && sig.length >= 8 && sig.length <= 72) {
    try {
      const dsaEncoding = sig.length === 64 ? 'ieee-p1363' : 'der';
      valid = nodeVerify('sha256', preAuthEncoding(envelope.payloadType, payload), { key: jwk, format: 'jwk', dsaEncoding }, sig);
    } catch {
      valid = false;
    }
  }
  if (!valid) return fail('signature_invalid', `the envelope signature does not verify with key ${bundle.kid}`);
  const tokens = bundle.timestampVerificationData?.rfc3161Timestamps.map((t) => t.signedTimestamp) ?? [];
  const time = decideSignedTime(bundle.kid, key.compromisedAt, sig ?? Buffer.alloc(0), tokens, trust);
  if (!time.ok) return fail(time.reason, time.message);

  const checked = checkStatement(payload, input.artifactSha256, input.artifactName);
  if (!checked.ok) return fail(checked.reason, checked.message);
  const { statement, subject, run } = checked;

  // The identity token outlives its 10 minutes here: check it as of the time it was issued.
  let claims: Record<string, unknown>;
  try {
    const issuedAt = decodeJwt(bundle.identityToken).iat;
    if (typeof issuedAt !== 'number') throw new Error('token has no iat');
    // A compromised key's token is checked with that key only once its signature's time passed above.
    const keys = trust.jwks.keys.some((k) => k.kid === jwk.kid) ? trust.jwks.keys : [...trust.jwks.keys, jwk];
    const result = await jwtVerify(bundle.identityToken, createLocalJWKSet({ keys } as never), {
      issuer: bundle.issuer,
      algorithms: ['ES256'],
      currentDate: new Date(issuedAt * 1000),
    });
    claims = result.payload as Record<string, unknown>;
  } catch (error) {
    return fail('token_invalid', `identity token does not verify: ${messageOf(error)}`);
  }
  const bound =
    claims['svc_run_id'] === run['svc_run_id'] &&
    claims['svc_job_id'] === run['svc_job_id'] &&
    claims['attestation_origin'] === bundle.attestationOrigin &&
    (bundle.attestationOrigin === 'live' ? claims['statement_hash'] === null : claims['statement_hash'] === bundle.statementHash);
  if (!bound) return fail('token_mismatch', 'identity token is not the one bound to this statement (run, job, origin or statement hash differ)');
  const signedAt = time.signedAt ? { signedAt: { genTime: time.signedAt.genTime.toISOString(), tsa: time.signedAt.tsa } } : {};
  return { ok: true, issuer: bundle.issuer, kid: bundle.kid, subject: { name: subject.name, sha256: subject.digest.sha256 }, attestationOrigin: bundle.attestationOrigin, claims, ...signedAt };
}
