// Which key verifies a signature, given revocations and RFC 3161 timestamps (issue 44 item 3):
// a key in the JWKS verifies; a key revoked with a compromise time verifies only signatures a
// trusted TSA dated strictly before that time; a plainly revoked key (no compromise time) and an
// untimestamped signature of a compromised key never do. The timestamp is checked here against
// the TSA chains of the trust material, never taken from the bundle's word.
import type { AttestationFailureReason, EcPublicJwk, Jwks, RevokedKey, TimestampAuthority } from '../../../schemas/identity.ts';
import { timestampTrust, verifyTimestampToken } from './timestamp.ts';

export interface SignedAt {
  genTime: Date;
  tsa: string;
}

export interface KeyTrust {
  jwks: Jwks;
  /** Known-revoked kids with no published key material (all-or-nothing). */
  revokedKids?: ReadonlySet<string>;
  revokedKeys?: readonly RevokedKey[];
  timestampAuthorities?: readonly TimestampAuthority[];
}

export type KeyDecision =
  | { ok: true; jwk: EcPublicJwk; signedAt?: SignedAt }
  | { ok: false; reason: Extract<AttestationFailureReason, 'key_revoked' | 'unknown_key' | 'timestamp_invalid'>; message: string };

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The trusted time of `signature` from the bundle's tokens: the earliest a known TSA signed.
 * A token no known TSA vouches for is a refusal (something was altered), not "no timestamp".
 * Without any TSA in the trust material nothing can be trusted: undefined.
 */
export function trustedSignedAt(tokens: readonly string[], signature: Uint8Array, authorities: readonly TimestampAuthority[]): { signedAt?: SignedAt } | { error: string } {
  if (tokens.length === 0 || authorities.length === 0) return {};
  const trusts = authorities.map((a) => timestampTrust(a.certChain));
  let earliest: SignedAt | undefined;
  for (const encoded of tokens) {
    if (encoded.length % 4 !== 0 || !B64.test(encoded)) return { error: 'a signed timestamp is not base64' };
    const token = Buffer.from(encoded, 'base64');
    const failures: string[] = [];
    let verified: SignedAt | undefined;
    for (const trust of trusts) {
      const verdict = verifyTimestampToken(token, signature, trust);
      if (verdict.ok) {
        verified = { genTime: verdict.genTime, tsa: verdict.tsa };
        break;
      }
      failures.push(verdict.message);
    }
    if (!verified) return { error: `the signed timestamp does not verify: ${failures.join('; ')}` };
    if (!earliest || verified.genTime < earliest.genTime) earliest = verified;
  }
  return earliest ? { signedAt: earliest } : {};
}

/** The key a signature names, before its time is looked at: revoked-with-compromise keys included, plainly revoked ones refused. */
export function candidateKey(kid: string, trust: KeyTrust): { ok: true; jwk: EcPublicJwk; compromisedAt?: Date } | Extract<KeyDecision, { ok: false }> {
  const revoked = trust.revokedKeys?.find((k) => k.kid === kid);
  if (revoked?.compromisedAt) return { ok: true, jwk: revoked.jwk, compromisedAt: new Date(revoked.compromisedAt) };
  if (revoked || trust.revokedKids?.has(kid)) return { ok: false, reason: 'key_revoked', message: `signing key ${kid} is revoked; what it signed no longer verifies` };
  const jwk = trust.jwks.keys.find((k) => k.kid === kid);
  if (!jwk) return { ok: false, reason: 'unknown_key', message: `signing key ${kid} is not in the issuer's key set` };
  return { ok: true, jwk };
}

/**
 * Once the signature verified with the candidate key: its trusted time, and whether a compromised
 * key's signature came strictly before the compromise.
 */
export function decideSignedTime(kid: string, compromisedAt: Date | undefined, signature: Uint8Array, tokens: readonly string[], trust: KeyTrust): { ok: true; signedAt?: SignedAt } | Extract<KeyDecision, { ok: false }> {
  const time = trustedSignedAt(tokens, signature, trust.timestampAuthorities ?? []);
  if ('error' in time) return { ok: false, reason: 'timestamp_invalid', message: time.error };
  const signedAt = time.signedAt;
  if (compromisedAt) {
    if (!signedAt) {
      return { ok: false, reason: 'key_revoked', message: `signing key ${kid} was compromised at ${compromisedAt.toISOString()} and this signature has no trusted timestamp` };
    }
    if (!(signedAt.genTime < compromisedAt)) {
      return { ok: false, reason: 'key_revoked', message: `signing key ${kid} was compromised at ${compromisedAt.toISOString()}; this signature was timestamped at ${signedAt.genTime.toISOString()}, not before` };
    }
  }
  return signedAt ? { ok: true, signedAt } : { ok: true };
}
