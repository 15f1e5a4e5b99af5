// The Sigstore bundle v0.3 form of a provenance attestation (docs/provenance.md, "Sigstore
// bundle"): the svc bundle's DSSE envelope, unchanged, with the orchestrator's public key as the
// verification material. It carries no identity token and no transparency-log entry, so the
// ecosystem's verifiers (sigstore-js, cosign with --key) check it against the key the orchestrator
// publishes: the Sigstore trusted root (`/.well-known/svc/trusted_root.json`) plus its keys in
// Sigstore's PublicKey form (`/.well-known/svc/public_keys.json`) or as PEM.
import { createPublicKey, verify as nodeVerify } from 'node:crypto';
import {
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
  SIGSTORE_BUNDLE_V03_MEDIA_TYPE,
  SIGSTORE_TRUSTED_ROOT_MEDIA_TYPE,
  SLSA_PROVENANCE_TYPE,
  SigstoreBundle,
  type AttestationBundle,
  type AttestationFailureReason,
  type EcPublicJwk,
  type Jwks,
  type SigningKeySummary,
  type VerifyAttestationResponse,
} from '../../../schemas/identity.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { messageOf } from '../../../core/errors.ts';
import { preAuthEncoding, type ProvenanceStatement } from './dsse.ts';

const checkSigstoreBundle = compileSchema(SigstoreBundle);
const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Sigstore's name for an ECDSA P-256 key with SHA-256 (protobuf-specs PublicKeyDetails). */
export const SIGSTORE_P256_KEY_DETAILS = 'PKIX_ECDSA_P256_SHA_256';

/** `<artifact base name>.sigstore.json`, the name Sigstore tools look for beside an artifact. */
export function sigstoreBundleFileName(artifactName: string): string {
  const base = artifactName.split(/[\\/]/).pop() || 'artifact';
  return `${base}.sigstore.json`;
}

type Stamped = { timestampVerificationData?: { rfc3161Timestamps: Array<{ signedTimestamp: string }> } };

/** The same signed envelope (and RFC 3161 timestamps over its signature, if any), re-framed: nothing is signed again. */
export function toSigstoreBundle(bundle: AttestationBundle): SigstoreBundle {
  const stamps = (bundle as AttestationBundle & Stamped).timestampVerificationData?.rfc3161Timestamps ?? [];
  return {
    mediaType: SIGSTORE_BUNDLE_V03_MEDIA_TYPE,
    verificationMaterial: {
      publicKey: { hint: bundle.kid },
      tlogEntries: [],
      timestampVerificationData: { rfc3161Timestamps: stamps.map((s) => ({ signedTimestamp: s.signedTimestamp })) },
    },
    dsseEnvelope: {
      payloadType: bundle.dsseEnvelope.payloadType,
      payload: bundle.dsseEnvelope.payload,
      signatures: bundle.dsseEnvelope.signatures.map((s) => ({ keyid: s.keyid, sig: s.sig })),
    },
  };
}

export function isSigstoreBundle(value: unknown): boolean {
  const mediaType = (value as { mediaType?: unknown } | null)?.mediaType;
  return typeof mediaType === 'string' && mediaType.startsWith('application/vnd.dev.sigstore.bundle');
}

/** SubjectPublicKeyInfo PEM of a served JWK: what cosign `--key`, securesystemslib and in-toto take. */
export function publicKeyPem(jwk: EcPublicJwk): string {
  return createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y }, format: 'jwk' }).export({ type: 'spki', format: 'pem' }).toString();
}

/**
 * Sigstore TrustedRoot (protobuf-specs JSON). No transparency log, CT log or Fulcio CA: the
 * orchestrator's keys are the trust, and they live beside it (publicKeysDocument). The timestamp
 * authorities list is where a configured TSA's chain belongs.
 */
export function trustedRootDocument(timestampAuthorities: unknown[] = []): Record<string, unknown> {
  return { mediaType: SIGSTORE_TRUSTED_ROOT_MEDIA_TYPE, tlogs: [], certificateAuthorities: [], ctlogs: [], timestampAuthorities };
}

/**
 * `{ keys: { <kid>: PublicKey } }`: each served key in Sigstore's PublicKey form (DER SPKI as
 * base64 `rawBytes`, key details, validity from its creation), keyed by the bundle's `hint`.
 * A revoked key is not served, as in the JWKS.
 */
export function publicKeysDocument(jwks: Jwks, summaries: SigningKeySummary[]): { keys: Record<string, unknown> } {
  const created = new Map(summaries.map((s) => [s.kid, s.createdAt]));
  const keys: Record<string, unknown> = {};
  for (const jwk of jwks.keys) {
    const der = createPublicKey(publicKeyPem(jwk)).export({ type: 'spki', format: 'der' });
    const start = created.get(jwk.kid);
    keys[jwk.kid] = {
      rawBytes: der.toString('base64'),
      keyDetails: SIGSTORE_P256_KEY_DETAILS,
      ...(start === undefined ? {} : { validFor: { start: new Date(start).toISOString() } }),
    };
  }
  return { keys };
}

/** verify-attestation.ts's input, restated so that module can import this one without a cycle. */
export interface SigstoreVerifyInput {
  bundle: unknown;
  artifactSha256: string;
  artifactName?: string;
  trust: { issuer: string; jwks: Jwks; revokedKids?: ReadonlySet<string> };
}

const fail = (reason: AttestationFailureReason, message: string): VerifyAttestationResponse => ({ ok: false, reason, message });

function decodeB64(text: string): Buffer | undefined {
  if (text.length % 4 !== 0 || !B64.test(text)) return undefined;
  return Buffer.from(text, 'base64');
}

/**
 * A Sigstore bundle against the issuer's keys: the key named by `publicKey.hint` must be served
 * (not revoked), its DER signature must cover the DSSE PAE, and the statement's subject must be
 * the artifact. The run's identity claims come from the signed statement (internalParameters).
 */
export function verifySigstoreBundle(input: SigstoreVerifyInput): VerifyAttestationResponse {
  const parsed = checkSigstoreBundle.validate(input.bundle);
  if (!parsed.ok) return fail('bundle_malformed', `not a Sigstore bundle v0.3 with a public key: ${formatIssues(parsed.issues)}`);
  const bundle = parsed.value;
  const { trust } = input;
  const kid = bundle.verificationMaterial.publicKey.hint;
  const envelope = bundle.dsseEnvelope;
  if (envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE) return fail('payload_type_mismatch', `payload type ${envelope.payloadType} is not ${IN_TOTO_PAYLOAD_TYPE}`);
  if (trust.revokedKids?.has(kid)) return fail('key_revoked', `signing key ${kid} is revoked; what it signed no longer verifies`);
  const jwk = trust.jwks.keys.find((k) => k.kid === kid);
  if (!jwk) return fail('unknown_key', `signing key ${kid} is not in the issuer's key set`);
  const payload = decodeB64(envelope.payload);
  if (!payload) return fail('bundle_malformed', 'envelope payload is not base64');
  const pae = preAuthEncoding(envelope.payloadType, payload);
  // Sigstore verifiers check the one signature against the hinted key; so does this.
  const valid = envelope.signatures.some((s) => {
    const sig = decodeB64(s.sig);
    if (!sig || sig.length < 8 || sig.length > 72) return false;
    try {
      return nodeVerify('sha256', pae, { key: jwk, format: 'jwk', dsaEncoding: 'der' }, sig);
    } catch {
      return false;
    }
  });
  if (!valid) return fail('signature_invalid', `the envelope signature does not verify with key ${kid}`);
  let statement: ProvenanceStatement;
  try {
    statement = JSON.parse(payload.toString('utf8')) as ProvenanceStatement;
  } catch (error) {
    return fail('statement_invalid', `statement is not JSON: ${messageOf(error)}`);
  }
  const subject = Array.isArray(statement?.subject) ? statement.subject[0] : undefined;
  const run = statement?.predicate?.buildDefinition?.internalParameters;
  if (statement?._type !== IN_TOTO_STATEMENT_TYPE || statement.predicateType !== SLSA_PROVENANCE_TYPE || !subject || typeof subject.digest?.sha256 !== 'string' || !run) {
    return fail('statement_invalid', 'statement is not an in-toto v1 statement with an SLSA provenance v1 predicate');
  }
  if (subject.digest.sha256 !== input.artifactSha256.toLowerCase()) {
    return fail('artifact_mismatch', `artifact sha256 ${input.artifactSha256} is not the attested ${subject.digest.sha256}`);
  }
  if (input.artifactName !== undefined && subject.name !== input.artifactName) {
    return fail('artifact_mismatch', `artifact name ${input.artifactName} is not the attested ${subject.name}`);
  }
  // The builder must be the trusted issuer: a key shared across issuers would otherwise pass.
  const builder = statement.predicate.runDetails?.builder?.id;
  if (typeof builder !== 'string' || builder.replace(/\/+$/, '') !== trust.issuer.replace(/\/+$/, '')) {
    return fail('issuer_mismatch', `statement builder ${String(builder)} is not the trusted issuer ${trust.issuer}`);
  }
  return { ok: true, issuer: trust.issuer, kid, subject: { name: subject.name, sha256: subject.digest.sha256 }, format: 'sigstore-v0.3', claims: run };
}
