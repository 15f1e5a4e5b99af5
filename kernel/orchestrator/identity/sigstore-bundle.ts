// The Sigstore bundle v0.3 form of a provenance attestation (docs/provenance.md, "Sigstore
// bundle"): the svc bundle's DSSE envelope, unchanged, with the orchestrator's public key as the
// verification material. It carries no identity token and no transparency-log entry, so the
// ecosystem's verifiers (sigstore-js, cosign with --key) check it against the key the orchestrator
// publishes: the Sigstore trusted root (`/.well-known/svc/trusted_root.json`) plus its keys in
// Sigstore's PublicKey form (`/.well-known/svc/public_keys.json`) or as PEM.
import { X509Certificate, createPublicKey, verify as nodeVerify } from 'node:crypto';
import {
  IN_TOTO_PAYLOAD_TYPE,
  SIGSTORE_BUNDLE_V03_MEDIA_TYPE,
  SIGSTORE_TRUSTED_ROOT_MEDIA_TYPE,
  SigstoreBundle,
  type AttestationBundle,
  type AttestationFailureReason,
  type EcPublicJwk,
  type Jwks,
  type RevokedKey,
  type SigningKeySummary,
  type TimestampAuthority,
  type VerifyAttestationResponse,
} from '../../../schemas/identity.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { preAuthEncoding } from './dsse.ts';
import { candidateKey, decideSignedTime, type KeyTrust } from './signed-time.ts';
import { checkStatement } from './statement-check.ts';

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

function derLength(length: number): Buffer {
  if (length < 0x80) return Buffer.from([length]);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** Offset and end of the first DER element's contents at `at`, or undefined when it does not parse. */
function derContents(der: Buffer, at: number): { start: number; end: number } | undefined {
  const first = der[at + 1];
  if (first === undefined) return undefined;
  let start = at + 2;
  let length = first;
  if (first & 0x80) {
    const count = first & 0x7f;
    if (count === 0 || count > 4) return undefined;
    length = 0;
    for (let i = 0; i < count; i += 1) length = length * 256 + (der[start + i] ?? 0);
    start += count;
  }
  return start + length <= der.length ? { start, end: start + length } : undefined;
}

/** Status "granted", no text: the one PKIStatusInfo a stored token was issued under. */
const GRANTED = Buffer.from([0x30, 0x03, 0x02, 0x01, 0x00]);

/**
 * A Sigstore bundle's `signedTimestamp` is a DER TimeStampResp (protobuf-specs
 * RFC3161SignedTimestamp; sigstore-js reads the status, then the token), where the svc bundle
 * keeps the bare TimeStampToken: wrapped here, byte for byte, as `SEQUENCE { status, token }`.
 */
export function timestampResponseOf(tokenBase64: string): string {
  const body = Buffer.concat([GRANTED, Buffer.from(tokenBase64, 'base64')]);
  return Buffer.concat([Buffer.from([0x30]), derLength(body.length), body]).toString('base64');
}

/** The TimeStampToken inside a TimeStampResp (undefined when it is not one). */
export function timestampTokenOf(responseBase64: string): string | undefined {
  const der = Buffer.from(responseBase64, 'base64');
  const outer = der[0] === 0x30 ? derContents(der, 0) : undefined;
  const status = outer && der[outer.start] === 0x30 ? derContents(der, outer.start) : undefined;
  if (!outer || !status || status.end >= outer.end) return undefined;
  return der.subarray(status.end, outer.end).toString('base64');
}

/** The same signed envelope (and RFC 3161 timestamps over its signature, if any), re-framed: nothing is signed again. */
export function toSigstoreBundle(bundle: AttestationBundle): SigstoreBundle {
  const stamps = (bundle as AttestationBundle & Stamped).timestampVerificationData?.rfc3161Timestamps ?? [];
  return {
    mediaType: SIGSTORE_BUNDLE_V03_MEDIA_TYPE,
    verificationMaterial: {
      publicKey: { hint: bundle.kid },
      tlogEntries: [],
      timestampVerificationData: { rfc3161Timestamps: stamps.map((s) => ({ signedTimestamp: timestampResponseOf(s.signedTimestamp) })) },
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
export function trustedRootDocument(timestampAuthorities: readonly TimestampAuthority[] = []): Record<string, unknown> {
  return { mediaType: SIGSTORE_TRUSTED_ROOT_MEDIA_TYPE, tlogs: [], certificateAuthorities: [], ctlogs: [], timestampAuthorities: timestampAuthorities.map(sigstoreTimestampAuthority) };
}

/** `CN=x\nO=y` (node's X509Certificate subject) → one attribute. */
function attribute(subject: string, name: string): string | undefined {
  return subject.split('\n').find((line) => line.startsWith(`${name}=`))?.slice(name.length + 1);
}

/**
 * A configured TSA as Sigstore's CertificateAuthority: the chain leaf (the TSA certificate) first,
 * root last, as sigstore verifiers read it; valid from the TSA certificate's notBefore.
 */
export function sigstoreTimestampAuthority(authority: TimestampAuthority): Record<string, unknown> {
  const certs = authority.certChain.map((pem) => new X509Certificate(pem));
  // The leaf issued nothing in the chain; each next link is the issuer of the one before.
  const leaf = certs.find((c) => !certs.some((other) => other !== c && other.checkIssued(c))) ?? certs[0];
  const ordered: X509Certificate[] = [];
  for (let cert = leaf; cert !== undefined && !ordered.includes(cert); ) {
    ordered.push(cert);
    const current: X509Certificate = cert;
    cert = current.checkIssued(current) ? undefined : certs.find((c) => c !== current && current.checkIssued(c));
  }
  const first = ordered[0];
  return {
    subject: { organization: (first && attribute(first.subject, 'O')) ?? '', commonName: (first && attribute(first.subject, 'CN')) ?? '' },
    uri: authority.uri,
    certChain: { certificates: ordered.map((c) => ({ rawBytes: c.raw.toString('base64') })) },
    ...(first === undefined ? {} : { validFor: { start: new Date(first.validFrom).toISOString() } }),
  };
}

/**
 * `{ keys: { <kid>: PublicKey } }`: each served key in Sigstore's PublicKey form (DER SPKI as
 * base64 `rawBytes`, key details, validity from its creation), keyed by the bundle's `hint`.
 * A revoked key is not served, as in the JWKS.
 */
export function publicKeysDocument(jwks: Jwks, summaries: SigningKeySummary[], revoked: readonly RevokedKey[] = []): { keys: Record<string, unknown> } {
  const created = new Map(summaries.map((s) => [s.kid, s.createdAt]));
  const keys: Record<string, unknown> = {};
  const add = (jwk: EcPublicJwk, end?: string) => {
    const der = createPublicKey(publicKeyPem(jwk)).export({ type: 'spki', format: 'der' });
    const start = created.get(jwk.kid);
    // The start is floored to the second: a TSA that stamps whole seconds dates the key's first
    // signature before the key's creation instant, and sigstore-js compares them exactly.
    const from = start === undefined ? undefined : new Date(Math.floor(new Date(start).getTime() / 1000) * 1000).toISOString();
    const validFor = { ...(from === undefined ? {} : { start: from }), ...(end === undefined ? {} : { end: new Date(end).toISOString() }) };
    keys[jwk.kid] = { rawBytes: der.toString('base64'), keyDetails: SIGSTORE_P256_KEY_DETAILS, ...(Object.keys(validFor).length === 0 ? {} : { validFor }) };
  };
  for (const jwk of jwks.keys) add(jwk);
  // A key revoked as compromised at T is valid until T: a verifier that demands a timestamp
  // (sigstore-js timestampThreshold 1) accepts only what a trusted TSA dated before T.
  for (const key of revoked) if (key.compromisedAt) add(key.jwk, key.compromisedAt);
  return { keys };
}

/** verify-attestation.ts's input, restated so that module can import this one without a cycle. */
export interface SigstoreVerifyInput {
  bundle: unknown;
  artifactSha256: string;
  artifactName?: string;
  trust: KeyTrust & { issuer: string };
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
  // The same key rule as the svc bundle (signed-time.ts): a compromised key's signature counts
  // only with a trusted timestamp before the compromise.
  const key = candidateKey(kid, trust);
  if (!key.ok) return fail(key.reason, key.message);
  const jwk = key.jwk;
  const payload = decodeB64(envelope.payload);
  if (!payload) return fail('bundle_malformed', 'envelope payload is not base64');
  const pae = preAuthEncoding(envelope.payloadType, payload);
  // Sigstore verifiers check the one signature against the hinted key; so does this.
  const valid = envelope.signatures.map((s) => decodeB64(s.sig)).find((sig) => {
    if (!sig || sig.length < 8 || sig.length > 72) return false;
    try {
      return nodeVerify('sha256', pae, { key: jwk, format: 'jwk', dsaEncoding: 'der' }, sig);
    } catch {
      return false;
    }
  });
  if (!valid) return fail('signature_invalid', `the envelope signature does not verify with key ${kid}`);
  // An unreadable response is passed on as is: the token check then refuses it (timestamp_invalid).
  const tokens = bundle.verificationMaterial.timestampVerificationData?.rfc3161Timestamps.map((t) => timestampTokenOf(t.signedTimestamp) ?? t.signedTimestamp) ?? [];
  const time = decideSignedTime(kid, key.compromisedAt, valid, tokens, trust);
  if (!time.ok) return fail(time.reason, time.message);
  const checked = checkStatement(payload, input.artifactSha256, input.artifactName);
  if (!checked.ok) return fail(checked.reason, checked.message);
  const { statement, subject, run } = checked;
  // The builder must be the trusted issuer: a key shared across issuers would otherwise pass.
  const builder = statement.predicate.runDetails?.builder?.id;
  if (typeof builder !== 'string' || builder.replace(/\/+$/, '') !== trust.issuer.replace(/\/+$/, '')) {
    return fail('issuer_mismatch', `statement builder ${String(builder)} is not the trusted issuer ${trust.issuer}`);
  }
  const signedAt = time.signedAt ? { signedAt: { genTime: time.signedAt.genTime.toISOString(), tsa: time.signedAt.tsa } } : {};
  return { ok: true, issuer: trust.issuer, kid, subject: { name: subject.name, sha256: subject.digest.sha256 }, format: 'sigstore-v0.3', claims: run, ...signedAt };
}
