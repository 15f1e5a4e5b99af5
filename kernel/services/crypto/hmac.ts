// Webhook signatures: HMAC-SHA256 over the exact body bytes, compared in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function hmacSha256Hex(secret: string | Buffer, body: Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

const HUB_SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;

/**
 * Check an `X-Hub-Signature-256` style header (`sha256=<hex>`) against every secret; two secrets
 * are configured while one is being rotated. Empty secrets are ignored: an empty HMAC key
 * would let anyone sign.
 */
export function verifyHubSignature(header: string | undefined, body: Buffer, secrets: readonly (string | Buffer)[]): boolean {
  if (typeof header !== 'string') return false;
  const match = HUB_SIGNATURE.exec(header.trim());
  if (!match) return false;
  const given = Buffer.from(match[1]!, 'hex');
  let ok = false;
  for (const secret of secrets) {
    if (secret.length === 0) continue;
    const expected = createHmac('sha256', secret).update(body).digest();
    // Check every secret (no early exit) so timing does not tell which one matched.
    if (expected.length === given.length && timingSafeEqual(expected, given)) ok = true;
  }
  return ok;
}
