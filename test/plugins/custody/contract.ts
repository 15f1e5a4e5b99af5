// The custody contract every custody plugin must pass.
import { randomBytes, verify } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import type { Test } from '../../fixtures/db.ts';

export async function custodyContract(t: Test, custody: CustodyExtensionPoint): Promise<void> {
  const kid = await custody.keyId();
  const jwk = await custody.getPublicJwk();
  t.equal(jwk.kty, 'EC');
  t.equal(jwk.crv, 'P-256');
  t.notOk('d' in jwk, 'no private part');
  t.equal(kid, await calculateJwkThumbprint({ kty: 'EC', crv: 'P-256', x: jwk.x as string, y: jwk.y as string }, 'sha256'), 'kid is the RFC 7638 thumbprint');
  for (const size of [0, 1, 100, 4096, 5000, 20_000]) {
    const message = randomBytes(size);
    const signature = await custody.sign(message, kid);
    t.equal(signature.length, 64, `raw 64-byte signature for a ${size}-byte message`);
    t.ok(verify('sha256', message, { key: { ...jwk, kid: undefined } as never, format: 'jwk', dsaEncoding: 'ieee-p1363' }, signature), `verifies (${size} bytes)`);
  }
  await t.rejects(custody.sign(Buffer.from('x'), 'some-other-kid'), { code: 'SVC_ERR_CUSTODY_KEY_STATE' });
}
