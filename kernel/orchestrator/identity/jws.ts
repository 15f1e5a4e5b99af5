// Compact JWS through a custody plugin: jose's SignJWT needs the private key in process, which
// aws-kms and command custody never give us, so the signing input is built here and signed by
// `custody.sign` (64-byte raw r‖s is exactly the JWS ES256 signature encoding).
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import { ES256_SIGNATURE_BYTES } from '../../../core/extension-points/custody.ts';
import { SvcError } from '../../../core/errors.ts';

const b64url = (bytes: Uint8Array | string): string => Buffer.from(bytes).toString('base64url');

export async function signCompactJws(custody: CustodyExtensionPoint, kid: string, payload: object): Promise<string> {
  const header = { alg: 'ES256', typ: 'JWT', kid };
  const signingInput = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const signature = await custody.sign(Buffer.from(signingInput, 'ascii'), kid);
  if (!(signature instanceof Uint8Array) || signature.length !== ES256_SIGNATURE_BYTES) {
    throw new SvcError('SVC_ERR_IDENTITY_SIGNATURE_SHAPE', `the custody plugin returned a ${signature?.length ?? 0}-byte signature; ES256 needs ${ES256_SIGNATURE_BYTES}`);
  }
  return `${signingInput}.${b64url(signature)}`;
}
