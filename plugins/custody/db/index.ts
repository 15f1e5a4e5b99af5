// `db` custody (SVC_ORCHESTRATOR_SIGNER_KIND=db, the default): ES256 keys generated here, stored
// in the kernel's signing_keys table sealed under the master key. The kernel binds the vault
// (table + master key as a capability) at identity start; the private key never leaves this
// module unsealed.
import { createPrivateKey, sign as nodeSign, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, exportPKCS8, generateKeyPair, type JWK } from 'jose';
import { Type } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import {
  CUSTODY_NO_ACTIVE_KEY,
  type CustodyExtensionPoint,
  type CustodyKeyVault,
  type GeneratedKey,
  type StoredSigningKey,
} from '../../../core/extension-points/custody.ts';
import { ConflictError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';

export const DbCustodyConfig = Type.Object(
  {
    /** How long the id of the active key is trusted before re-reading it (another node may rotate). */
    activeCacheMs: Type.Integer({ minimum: 0, maximum: 60_000, default: 1000 }),
  },
  { additionalProperties: false },
);

export function sealingAd(kid: string): string {
  return `signing-key:${kid}`;
}

interface NewKey {
  kid: string;
  publicJwk: JWK;
  sealedPrivateKey: string;
}

async function newKey(vault: CustodyKeyVault): Promise<NewKey> {
  const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = await exportJWK(publicKey);
  const publicJwk: JWK = { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y };
  const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
  const pkcs8 = Buffer.from(await exportPKCS8(privateKey), 'utf8');
  const sealedPrivateKey = vault.seal(pkcs8, sealingAd(kid));
  pkcs8.fill(0);
  return { kid, publicJwk: { ...publicJwk, kid, alg: 'ES256', use: 'sig' }, sealedPrivateKey };
}

export class DbCustody implements CustodyExtensionPoint {
  #vault: CustodyKeyVault | undefined;
  readonly #keys = new Map<string, KeyObject>();
  readonly #activeCacheMs: number;
  #active: { key: StoredSigningKey; at: number } | undefined;

  constructor(options: { activeCacheMs: number }) {
    this.#activeCacheMs = options.activeCacheMs;
  }

  bind(vault: CustodyKeyVault): void {
    this.#vault = vault;
    this.#active = undefined;
  }

  #bound(): CustodyKeyVault {
    if (!this.#vault) throw new SvcError('SVC_ERR_CUSTODY_NOT_BOUND', 'db custody has no key table yet (the identity subsystem binds it at start)');
    return this.#vault;
  }

  async #activeKey(): Promise<StoredSigningKey> {
    const now = Date.now();
    if (this.#active && now - this.#active.at < this.#activeCacheMs) return this.#active.key;
    const key = await this.#bound().active();
    if (!key) {
      this.#active = undefined;
      throw new UnavailableError(CUSTODY_NO_ACTIVE_KEY, 'no active signing key yet (svc-admin signing-key generate creates one)');
    }
    this.#active = { key, at: now };
    return key;
  }

  async keyId(): Promise<string> {
    return (await this.#activeKey()).kid;
  }

  async getPublicJwk(): Promise<JWK> {
    const key = await this.#activeKey();
    return { ...key.publicJwk, kid: key.kid };
  }

  #load(key: StoredSigningKey): KeyObject {
    const cached = this.#keys.get(key.kid);
    if (cached) return cached;
    if (key.sealedPrivateKey === null) throw new SvcError('SVC_ERR_CUSTODY_KEY_UNLOADABLE', `signing key ${key.kid} is not a db-custody key`);
    let pem: Uint8Array;
    try {
      pem = this.#bound().open(key.sealedPrivateKey, sealingAd(key.kid));
    } catch (error) {
      throw new SvcError('SVC_ERR_CUSTODY_KEY_UNLOADABLE', `signing key ${key.kid} could not be unsealed: ${messageOf(error)}`, { cause: error });
    }
    const object = createPrivateKey({ key: Buffer.from(pem), format: 'pem' });
    pem.fill(0);
    this.#keys.set(key.kid, object);
    return object;
  }

  async sign(bytes: Uint8Array, kid?: string): Promise<Uint8Array> {
    let key = await this.#activeKey();
    if (kid !== undefined && kid !== key.kid) {
      const named = await this.#bound().byKid(kid);
      if (!named || (named.status !== 'active' && named.status !== 'retiring')) {
        throw new ConflictError('SVC_ERR_CUSTODY_KEY_STATE', `signing key ${kid} is ${named?.status ?? 'unknown'}; it no longer signs`);
      }
      key = named;
    }
    return new Uint8Array(nodeSign('sha256', bytes, { key: this.#load(key), dsaEncoding: 'ieee-p1363' }));
  }

  async generate(): Promise<GeneratedKey> {
    const vault = this.#bound();
    const existing = await vault.active();
    if (existing?.sealedPrivateKey) return { kid: existing.kid, createdAt: existing.createdAt, created: false };
    if (existing) {
      // The active key belongs to another custody kind (the operator switched back to db): it
      // starts retiring so what it signed still verifies, and a db key takes over.
      const { key } = await vault.rotateTo(await newKey(vault));
      this.#active = undefined;
      return { kid: key.kid, createdAt: key.createdAt, created: true };
    }
    const { key, created } = await vault.insertActive(await newKey(vault));
    this.#active = undefined;
    return { kid: key.kid, createdAt: key.createdAt, created };
  }

  async rotate(): Promise<GeneratedKey> {
    const vault = this.#bound();
    const { key } = await vault.rotateTo(await newKey(vault));
    this.#active = undefined;
    return { kid: key.kid, createdAt: key.createdAt, created: true };
  }

  close(): void {
    this.#keys.clear();
  }
}

export const dbCustody = definePlugin({
  id: 'db',
  kind: 'custody',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'ES256 keys kept in the orchestrator database, sealed under the master key',
  configSchema: DbCustodyConfig,
  create: ({ config }) => new DbCustody({ activeCacheMs: config.activeCacheMs }),
});

export default dbCustody;
