// Signing-key custody extension point (spec "Signing key", "Command signer contract"): ES256 over
// EC P-256, signatures JOSE-raw (r‖s, 64 bytes). Private key material never leaves the plugin.
import type { JWK } from 'jose';
import { createExtensionPointRef, type PluginInstance } from './ref.ts';

export type { JWK } from 'jose';

export const ES256_SIGNATURE_BYTES = 64;

export interface GeneratedKey {
  kid: string;
  createdAt: Date;
  /** false when generate found a key already active (and returns that one). */
  created?: boolean;
}

/** A row of the kernel's `signing_keys` table as a custody plugin sees it. */
export interface StoredSigningKey {
  kid: string;
  status: 'active' | 'retiring' | 'retired' | 'revoked';
  publicJwk: JWK;
  /** Private key sealed under the master key (db custody), else null. */
  sealedPrivateKey: string | null;
  createdAt: Date;
}

export interface NewSigningKey {
  kid: string;
  publicJwk: JWK;
  sealedPrivateKey: string;
}

/**
 * What the kernel hands a custody plugin that keeps its keys in the orchestrator database: the
 * key table (rows of the plugin's custody kind) and the master key as a capability, never as bytes.
 */
export interface CustodyKeyVault {
  /** Seal under the current master key, bound to `additionalData` (`signing-key:<kid>`). */
  seal(plaintext: Uint8Array, additionalData: string): string;
  /** Open a value sealed under the current or the previous master key. */
  open(sealed: string, additionalData: string): Uint8Array;
  /** The active key, if any. */
  active(): Promise<StoredSigningKey | undefined>;
  /** A key by kid (any status). */
  byKid(kid: string): Promise<StoredSigningKey | undefined>;
  /** Insert as active unless a key is active already (clustered nodes converge on one). */
  insertActive(key: NewSigningKey): Promise<{ key: StoredSigningKey; created: boolean }>;
  /** One transaction: the active key becomes `retiring`, `key` becomes `active`. */
  rotateTo(key: NewSigningKey): Promise<{ key: StoredSigningKey; previousKid: string | null }>;
}

export interface CustodyExtensionPoint extends PluginInstance {
  /** Key id of the key `sign` uses now (JWKS `kid`, token header `kid`). */
  keyId(): Promise<string>;
  /** Public half as an EC P-256 JWK (`kty: 'EC', crv: 'P-256', x, y`). */
  getPublicJwk(): Promise<JWK>;
  /**
   * ES256 signature of `bytes`: 64-byte raw r‖s. `kid` (from an earlier keyId()) pins the key so a
   * rotation between the two calls cannot make a header name a key that did not sign.
   */
  sign(bytes: Uint8Array, kid?: string): Promise<Uint8Array>;
  /** db custody only: create the first active key (no-op if one is active). */
  generate?(): Promise<GeneratedKey>;
  /** db custody only: active → retiring, a new key becomes active. */
  rotate?(): Promise<GeneratedKey>;
  /** Custody kinds keeping keys in the orchestrator database receive the kernel's vault here. */
  bind?(vault: CustodyKeyVault): void;
}

export const custodyExtensionPoint = createExtensionPointRef<CustodyExtensionPoint>()({
  id: 'custody',
  kind: 'custody',
  members: {
    keyId: 'function',
    getPublicJwk: 'function',
    sign: 'function',
  },
});

/** Error code a custody plugin throws when no key is ready yet (mint waits, then defers `unavailable`). */
export const CUSTODY_NO_ACTIVE_KEY = 'SVC_ERR_CUSTODY_NO_ACTIVE_KEY';
