// The custody contract: ES256 over EC P-256, a JOSE-raw 64-byte signature that a standard JOSE
// library verifies, a kid that is the key's RFC 7638 thumbprint, and no private part ever shown.
import { randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, compactVerify, importJWK, type JWK } from 'jose';
import { ES256_SIGNATURE_BYTES, type CustodyExtensionPoint } from '../custody.ts';
import { expect, expectEqual, expectRejects, show } from './check.ts';
import type { BaseHarness, ContractContext, ContractPoint, ContractSuite } from './types.ts';

/**
 * `prepare` readies a key: db custody binds the kernel's key vault and calls `generate()`;
 * custody kinds that hold their key elsewhere (KMS, a signer command) need nothing.
 */
export interface CustodyHarness extends BaseHarness<'custody'> {
  /** Message sizes to sign; default 0, 1, 100, 4096, 5000, 20000 bytes. */
  messageSizes?: readonly number[];
}

type Ctx = ContractContext<'custody', CustodyHarness>;

const b64url = (bytes: Uint8Array | string): string => Buffer.from(bytes).toString('base64url');

/** Verify `signature` over `message` the way a relying party does: a compact JWS through jose. */
async function joseVerifies(jwk: JWK, kid: string, message: Uint8Array, signature: Uint8Array): Promise<boolean> {
  const header = b64url(JSON.stringify({ alg: 'ES256', kid }));
  const payload = b64url(message);
  const key = await importJWK({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y } as JWK, 'ES256');
  try {
    await compactVerify(`${header}.${payload}.${b64url(signature)}`, key);
    return true;
  } catch {
    return false;
  }
}

async function signJws(custody: CustodyExtensionPoint, kid: string, message: Uint8Array): Promise<{ signingInput: Buffer; signature: Uint8Array }> {
  // What the identity subsystem signs: the JWS signing input `header.payload`, not the raw claims.
  const signingInput = Buffer.from(`${b64url(JSON.stringify({ alg: 'ES256', kid }))}.${b64url(message)}`, 'ascii');
  return { signingInput, signature: await custody.sign(signingInput, kid) };
}

const points: ContractPoint<'custody', CustodyHarness>[] = [
  {
    point: 'key: the public JWK is EC P-256 with no private part',
    async run({ instance }: Ctx) {
      const jwk = await instance.getPublicJwk();
      expectEqual(jwk.kty, 'EC', 'jwk.kty');
      expectEqual(jwk.crv, 'P-256', 'jwk.crv');
      expect(typeof jwk.x === 'string' && Buffer.from(jwk.x, 'base64url').length === 32, `jwk.x must be 32 bytes base64url, got ${show(jwk.x)}`);
      expect(typeof jwk.y === 'string' && Buffer.from(jwk.y, 'base64url').length === 32, `jwk.y must be 32 bytes base64url, got ${show(jwk.y)}`);
      expect(!('d' in jwk), 'the public JWK carries the private part "d"');
    },
  },
  {
    point: 'key: keyId is the RFC 7638 thumbprint of the public key and stays stable',
    async run({ instance }: Ctx) {
      const kid = await instance.keyId();
      const jwk = await instance.getPublicJwk();
      const thumbprint = await calculateJwkThumbprint({ kty: 'EC', crv: 'P-256', x: jwk.x as string, y: jwk.y as string }, 'sha256');
      expectEqual(kid, thumbprint, 'keyId()');
      expectEqual(await instance.keyId(), kid, 'a second keyId()');
    },
  },
  {
    point: 'sign: a 64-byte raw r||s signature that jose verifies as ES256',
    async run({ instance, harness }: Ctx) {
      const kid = await instance.keyId();
      const jwk = await instance.getPublicJwk();
      for (const size of harness.messageSizes ?? [0, 1, 100, 4096, 5000, 20_000]) {
        const message = randomBytes(size);
        const { signature } = await signJws(instance, kid, message);
        expect(signature instanceof Uint8Array, `sign() must resolve to a Uint8Array, got ${show(signature)}`);
        expectEqual(signature.length, ES256_SIGNATURE_BYTES, `signature length for a ${size}-byte payload`);
        expect(await joseVerifies(jwk, kid, message, signature), `the signature of a ${size}-byte payload does not verify with jose (ES256)`);
      }
    },
  },
  {
    point: 'sign: a signature does not verify for other bytes',
    async run({ instance }: Ctx) {
      const kid = await instance.keyId();
      const jwk = await instance.getPublicJwk();
      const message = randomBytes(64);
      const { signature } = await signJws(instance, kid, message);
      const other = Buffer.from(message);
      other[0]! ^= 0xff;
      expect(!(await joseVerifies(jwk, kid, other, signature)), 'a signature verified for a different payload');
    },
  },
  {
    point: 'errors: a kid that no longer signs is refused with SVC_ERR_CUSTODY_KEY_STATE',
    async run({ instance }: Ctx) {
      await expectRejects(() => instance.sign(Buffer.from('x'), 'some-other-kid'), { code: 'SVC_ERR_CUSTODY_KEY_STATE' }, 'sign(bytes, unknown kid)');
    },
  },
];

export const custodyContract: ContractSuite<'custody', CustodyHarness> = { kind: 'custody', points };
