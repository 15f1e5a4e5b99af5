// RFC 3161 signed timestamps over attestation signatures. The orchestrator asks a timestamp
// authority (configured by URL) for a token over SHA-256 of the DSSE signature bytes and checks
// it at once; verifiers check it again against the TSA chain the trust material carries. A token
// dated before a key's compromise time keeps that key's signature verifiable after the revoke.
// ASN.1 comes from @peculiar/asn1-* (schemas, not hand parsing); signatures and the chain from
// node:crypto / X509Certificate.
import { createHash, randomBytes, verify as nodeVerify, X509Certificate } from 'node:crypto';
import { ContentInfo, EncapsulatedContentInfo, SignedData, SignerInfo, id_signedData } from '@peculiar/asn1-cms';
import { AsnConvert, OctetString } from '@peculiar/asn1-schema';
import { AlgorithmIdentifier, Certificate, ExtendedKeyUsage, SubjectKeyIdentifier, id_ce_extKeyUsage, id_ce_subjectKeyIdentifier, id_kp_timeStamping } from '@peculiar/asn1-x509';
import { MessageImprint, PKIStatus, TimeStampReq, TimeStampResp, TSTInfo, id_ct_tstInfo } from '@peculiar/asn1-tsp';
import { readFile } from 'node:fs/promises';
import { SvcError, messageOf } from '../../../core/errors.ts';

const SHA256 = '2.16.840.1.101.3.4.2.1';
const DIGESTS: Readonly<Record<string, string>> = { [SHA256]: 'sha256', '2.16.840.1.101.3.4.2.2': 'sha384', '2.16.840.1.101.3.4.2.3': 'sha512' };
/** Signature algorithms whose hash is their own; the rest (rsaEncryption, ecPublicKey) take the digest algorithm. */
const SIGNATURE_HASHES: Readonly<Record<string, string>> = {
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
};
const DIGEST_SIGNATURES = new Set(['1.2.840.10045.2.1', '1.2.840.113549.1.1.1']);
const ID_CONTENT_TYPE = '1.2.840.113549.1.9.3';
const ID_MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
/** How long the orchestrator waits for a TSA before it attests without a timestamp. */
export const TIMESTAMP_TIMEOUT_MS = 10_000;
const MAX_REPLY_BYTES = 256 * 1024;

/** The TSA chain a verifier trusts: self-signed certificates are anchors, the rest may complete a path. */
export interface TimestampTrust {
  roots: X509Certificate[];
  intermediates: X509Certificate[];
}

export type TimestampVerdict = { ok: true; genTime: Date; tsa: string } | { ok: false; message: string };

const PEM = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/** Every certificate of a PEM text, in order; throws on a block that is not a certificate. */
export function pemCertificates(text: string): string[] {
  return (text.match(PEM) ?? []).map((pem) => new X509Certificate(pem).toString());
}

export function timestampTrust(pems: readonly string[]): TimestampTrust {
  const certs = pems.map((pem) => new X509Certificate(pem));
  const selfSigned = (c: X509Certificate) => c.checkIssued(c) && c.verify(c.publicKey);
  return { roots: certs.filter(selfSigned), intermediates: certs.filter((c) => !selfSigned(c)) };
}

/** A positive nonce with no leading zero byte (one DER INTEGER encoding, compared byte for byte). */
function newNonce(): Buffer {
  const nonce = randomBytes(8);
  nonce[0] = ((nonce[0] ?? 0) & 0x3f) | 0x40;
  return nonce;
}

/** TimeStampReq over SHA-256 of `signature` with a nonce and certReq (the TSA certificate in the token). */
export function timestampRequest(signature: Uint8Array, nonce: Buffer = newNonce()): { der: Buffer; nonce: Buffer } {
  const request = new TimeStampReq({
    messageImprint: new MessageImprint({
      hashAlgorithm: new AlgorithmIdentifier({ algorithm: SHA256 }),
      hashedMessage: new OctetString(createHash('sha256').update(signature).digest()),
    }),
    nonce: new Uint8Array(nonce).buffer,
    certReq: true,
  });
  return { der: Buffer.from(AsnConvert.serialize(request)), nonce };
}

/** One DER element's header: where its contents start and end. */
function derElement(bytes: Buffer, offset: number): { start: number; end: number } {
  const first = bytes[offset + 1];
  if (first === undefined) throw new Error('truncated DER');
  if (first < 0x80) return { start: offset + 2, end: offset + 2 + first };
  const count = first & 0x7f;
  if (count === 0 || count > 4) throw new Error('unsupported DER length');
  let length = 0;
  for (let i = 0; i < count; i += 1) length = length * 256 + (bytes[offset + 2 + i] ?? 0);
  return { start: offset + 2 + count, end: offset + 2 + count + length };
}

/** The elements inside a constructed DER element (tag at `offset`), as [tag, start, end] with `start` at the tag. */
function derChildren(bytes: Buffer, offset: number): Array<{ tag: number; start: number; end: number }> {
  const outer = derElement(bytes, offset);
  const children: Array<{ tag: number; start: number; end: number }> = [];
  for (let at = outer.start; at < outer.end; ) {
    const child = derElement(bytes, at);
    children.push({ tag: bytes[at] ?? 0, start: at, end: child.end });
    at = child.end;
  }
  return children;
}

/**
 * The first signer's signed attributes exactly as the TSA encoded them (what its signature
 * covers, once re-tagged as a SET): ContentInfo → [0] → SignedData → signerInfos → SignerInfo → [0].
 */
function signedAttributesBytes(token: Buffer): Buffer | undefined {
  const explicit = derChildren(token, 0)[1];
  const signedData = explicit && derChildren(token, explicit.start)[0];
  const signerInfos = signedData && derChildren(token, signedData.start).at(-1);
  const signerInfo = signerInfos && derChildren(token, signerInfos.start)[0];
  const attributes = signerInfo && derChildren(token, signerInfo.start).find((c) => c.tag === 0xa0);
  return attributes ? Buffer.from(token.subarray(attributes.start, attributes.end)) : undefined;
}

/**
 * The token inside a TimeStampResp, byte for byte as the TSA sent it (re-encoding a parsed token
 * could change the bytes the TSA signed). Throws with the TSA's status when it refused.
 */
export function tokenFromReply(reply: Uint8Array): Buffer {
  const bytes = Buffer.from(reply);
  const parsed = AsnConvert.parse(bytes, TimeStampResp);
  const status = parsed.status.status;
  if (status !== PKIStatus.granted && status !== PKIStatus.grantedWithMods) {
    const text = parsed.status.statusString?.join('; ') ?? '';
    throw new Error(`the TSA refused the request (status ${PKIStatus[status] ?? status}${text ? `: ${text}` : ''})`);
  }
  if (!parsed.timeStampToken) throw new Error('the TSA granted the request but sent no token');
  const outer = derElement(bytes, 0);
  const statusInfo = derElement(bytes, outer.start);
  const token = derElement(bytes, statusInfo.end);
  return bytes.subarray(statusInfo.end, token.end);
}

const sameBytes = (a: ArrayBuffer | Uint8Array, b: ArrayBuffer | Uint8Array) => Buffer.from(a as ArrayBuffer).equals(Buffer.from(b as ArrayBuffer));
const stripZeros = (bytes: ArrayBuffer | Uint8Array) => {
  const b = Buffer.from(bytes as ArrayBuffer);
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i += 1;
  return b.subarray(i);
};

function tsaCertificate(signer: SignerInfo, candidates: X509Certificate[]): X509Certificate | undefined {
  const sid = signer.sid;
  return candidates.find((cert) => {
    const parsed = AsnConvert.parse(cert.raw, Certificate).tbsCertificate;
    if (sid.issuerAndSerialNumber) {
      return sameBytes(stripZeros(parsed.serialNumber), stripZeros(sid.issuerAndSerialNumber.serialNumber)) && sameBytes(AsnConvert.serialize(parsed.issuer), AsnConvert.serialize(sid.issuerAndSerialNumber.issuer));
    }
    const ski = parsed.extensions?.find((e) => e.extnID === id_ce_subjectKeyIdentifier);
    return ski !== undefined && sid.subjectKeyIdentifier !== undefined && sameBytes(AsnConvert.parse(ski.extnValue.buffer, SubjectKeyIdentifier).buffer, sid.subjectKeyIdentifier.buffer);
  });
}

/** RFC 3161 §2.3: the TSA certificate has exactly one, critical, extendedKeyUsage: timeStamping. */
function checkTsaUsage(cert: X509Certificate): string | undefined {
  const extensions = AsnConvert.parse(cert.raw, Certificate).tbsCertificate.extensions ?? [];
  const eku = extensions.filter((e) => e.extnID === id_ce_extKeyUsage);
  if (eku.length !== 1 || !eku[0]?.critical) return 'the TSA certificate lacks a critical extendedKeyUsage';
  const purposes = [...AsnConvert.parse(eku[0].extnValue.buffer, ExtendedKeyUsage)];
  if (purposes.length !== 1 || purposes[0] !== id_kp_timeStamping) return 'the TSA certificate is not for timeStamping only';
  return undefined;
}

const validAt = (cert: X509Certificate, at: Date) => new Date(cert.validFrom) <= at && at <= new Date(cert.validTo);

/** A path from the TSA certificate to a trusted root, every link valid when the token was made. */
function chainsToRoot(leaf: X509Certificate, pool: X509Certificate[], trust: TimestampTrust, at: Date): string | undefined {
  const isRoot = (c: X509Certificate) => trust.roots.some((r) => r.fingerprint256 === c.fingerprint256);
  let current = leaf;
  for (let depth = 0; depth < 6; depth += 1) {
    if (!validAt(current, at)) return `certificate ${current.subject} was not valid at ${at.toISOString()}`;
    if (isRoot(current)) return undefined;
    const parent = [...trust.roots, ...trust.intermediates, ...pool].find((c) => c.ca && current.checkIssued(c) && current.verify(c.publicKey));
    if (!parent) return `certificate ${current.subject.replace(/\n/g, ', ')} does not chain to a trusted TSA root`;
    current = parent;
  }
  return 'the TSA certificate chain is too long';
}

function checkSignedAttributes(signer: SignerInfo, content: Buffer): string | undefined {
  const digest = DIGESTS[signer.digestAlgorithm.algorithm];
  if (!digest) return `unsupported digest algorithm ${signer.digestAlgorithm.algorithm}`;
  const attributes = signer.signedAttrs ?? [];
  const contentType = attributes.find((a) => a.attrType === ID_CONTENT_TYPE);
  const messageDigest = attributes.find((a) => a.attrType === ID_MESSAGE_DIGEST);
  if (!contentType || !messageDigest) return 'the token has no signed content type and message digest';
  const value = messageDigest.attrValues[0];
  if (!value || !sameBytes(AsnConvert.parse(value, OctetString).buffer, createHash(digest).update(content).digest())) {
    return 'the signed message digest is not the digest of the timestamp info';
  }
  return undefined;
}

function verifySignerSignature(signer: SignerInfo, signedAttributes: Buffer, cert: X509Certificate): boolean {
  const algorithm = signer.signatureAlgorithm.algorithm;
  const hash = SIGNATURE_HASHES[algorithm] ?? (DIGEST_SIGNATURES.has(algorithm) ? DIGESTS[signer.digestAlgorithm.algorithm] : undefined);
  if (!hash) return false;
  // The signature covers the attributes as a SET (tag 0x31), not as the [0] IMPLICIT field.
  const signed = Buffer.from(signedAttributes);
  signed[0] = 0x31;
  try {
    return nodeVerify(hash, signed, cert.publicKey, Buffer.from(signer.signature.buffer));
  } catch {
    return false;
  }
}

/**
 * Checks a TimeStampToken over `signature`: the message imprint is SHA-2 of those bytes, the
 * nonce is the one asked for (when given), the TSA's signature over the signed attributes holds,
 * the TSA certificate is for timestamping only and chains to a trusted root at genTime.
 */
export function verifyTimestampToken(token: Uint8Array, signature: Uint8Array, trust: TimestampTrust, expectNonce?: Buffer): TimestampVerdict {
  try {
    const info = AsnConvert.parse(Buffer.from(token), ContentInfo);
    if (info.contentType !== id_signedData) return { ok: false, message: 'the timestamp token is not CMS signed data' };
    const signed = AsnConvert.parse(info.content, SignedData);
    const encapsulated: EncapsulatedContentInfo = signed.encapContentInfo;
    const content = encapsulated.eContent?.single?.buffer ?? encapsulated.eContent?.any;
    if (encapsulated.eContentType !== id_ct_tstInfo || !content) return { ok: false, message: 'the timestamp token carries no TSTInfo' };
    const contentBytes = Buffer.from(content);
    const tst = AsnConvert.parse(contentBytes, TSTInfo);
    const imprintHash = DIGESTS[tst.messageImprint.hashAlgorithm.algorithm];
    if (!imprintHash) return { ok: false, message: `unsupported message imprint algorithm ${tst.messageImprint.hashAlgorithm.algorithm}` };
    if (!sameBytes(tst.messageImprint.hashedMessage.buffer, createHash(imprintHash).update(signature).digest())) {
      return { ok: false, message: 'the timestamp is not over this signature (message imprint differs)' };
    }
    if (expectNonce && (!tst.nonce || !stripZeros(tst.nonce).equals(stripZeros(expectNonce)))) return { ok: false, message: 'the timestamp nonce is not the one requested' };
    const signer = signed.signerInfos[0];
    if (!signer || signed.signerInfos.length !== 1) return { ok: false, message: 'the timestamp token must have exactly one signer' };
    const attributeProblem = checkSignedAttributes(signer, contentBytes);
    if (attributeProblem) return { ok: false, message: attributeProblem };
    const embedded = (signed.certificates ?? []).flatMap((choice) => (choice.certificate ? [new X509Certificate(Buffer.from(AsnConvert.serialize(choice.certificate)))] : []));
    const cert = tsaCertificate(signer, [...embedded, ...trust.intermediates, ...trust.roots]);
    if (!cert) return { ok: false, message: 'the TSA certificate is neither in the token nor in the trusted chain' };
    const signedAttributes = signedAttributesBytes(Buffer.from(token));
    if (!signedAttributes || !verifySignerSignature(signer, signedAttributes, cert)) return { ok: false, message: 'the TSA signature over the timestamp does not verify' };
    const usage = checkTsaUsage(cert);
    if (usage) return { ok: false, message: usage };
    const chain = chainsToRoot(cert, embedded, trust, tst.genTime);
    if (chain) return { ok: false, message: chain };
    return { ok: true, genTime: tst.genTime, tsa: cert.subject.replace(/\n/g, ', ') };
  } catch (error) {
    return { ok: false, message: `the timestamp token is malformed: ${messageOf(error)}` };
  }
}

export interface Timestamper {
  readonly url: string;
  /** The TSA chain (PEM) verifiers are given: published in the key-status document and trust roots. */
  readonly certificates: readonly string[];
  readonly trust: TimestampTrust;
  /** A checked token over `signature`; throws (with why) when the TSA cannot give one. */
  stamp(signature: Uint8Array): Promise<{ token: Buffer; genTime: Date }>;
}

export function createTimestamper(options: { url: string; certificates: readonly string[]; timeoutMs?: number }): Timestamper {
  const trust = timestampTrust(options.certificates);
  if (trust.roots.length === 0) throw new Error('the TSA certificate file holds no self-signed root to anchor the chain');
  return {
    url: options.url,
    certificates: options.certificates,
    trust,
    async stamp(signature) {
      const request = timestampRequest(signature);
      let response: Response;
      try {
        response = await fetch(options.url, {
          method: 'POST',
          headers: { 'content-type': 'application/timestamp-query', accept: 'application/timestamp-reply' },
          body: request.der,
          signal: AbortSignal.timeout(options.timeoutMs ?? TIMESTAMP_TIMEOUT_MS),
        });
      } catch (error) {
        throw new Error(`could not reach the TSA ${options.url}: ${messageOf(error)}`);
      }
      const body = Buffer.from(await response.arrayBuffer());
      if (!response.ok) throw new Error(`the TSA ${options.url} answered ${response.status}`);
      if (!(response.headers.get('content-type') ?? '').startsWith('application/timestamp-reply')) {
        throw new Error(`the TSA ${options.url} answered ${response.headers.get('content-type') ?? 'no content type'}, not application/timestamp-reply`);
      }
      if (body.length > MAX_REPLY_BYTES) throw new Error(`the TSA reply is larger than ${MAX_REPLY_BYTES} bytes`);
      const token = tokenFromReply(body);
      const verdict = verifyTimestampToken(token, signature, trust, request.nonce);
      if (!verdict.ok) throw new Error(`the TSA token does not verify: ${verdict.message}`);
      return { token, genTime: verdict.genTime };
    },
  };
}

/**
 * The TSA the orchestrator settings name (`orchestrator.timestampUrl`, `.timestampCertChainFile`),
 * or undefined when no URL is set. A URL without a usable chain stops the start: a token nobody
 * can check against a root is worth nothing after a compromise.
 */
export async function timestamperFromConfig(settings: { timestampUrl?: string | undefined; timestampCertChainFile?: string | undefined }): Promise<Timestamper | undefined> {
  if (!settings.timestampUrl) return undefined;
  const fail = (reason: string) => new SvcError('SVC_ERR_IDENTITY_TIMESTAMP_CONFIG', `the timestamp authority settings are not usable: ${reason} (SVC_ORCHESTRATOR_TIMESTAMP_URL needs SVC_ORCHESTRATOR_TIMESTAMP_CERT_CHAIN_FILE, a PEM chain with its root)`);
  if (!settings.timestampCertChainFile) throw fail('no certificate chain file is set');
  let certificates: string[];
  try {
    certificates = pemCertificates(await readFile(settings.timestampCertChainFile, 'utf8'));
  } catch (error) {
    throw fail(`could not read ${settings.timestampCertChainFile}: ${messageOf(error)}`);
  }
  if (certificates.length === 0) throw fail(`${settings.timestampCertChainFile} holds no PEM certificate`);
  try {
    return createTimestamper({ url: settings.timestampUrl, certificates });
  } catch (error) {
    throw fail(`${settings.timestampCertChainFile}: ${messageOf(error)}`);
  }
}
