// Signing-key custody extension point (spec "Signing key", "Command signer contract"): ES256 over
// EC P-256, signatures JOSE-raw (r‖s, 64 bytes). Private key material never leaves the plugin.
import type { JWK } from 'jose';
import { createExtensionPointRef, type PluginInstance } from './ref.ts';

export type { JWK } from 'jose';

export const ES256_SIGNATURE_BYTES = 64;

export interface GeneratedKey {
  kid: string;
  createdAt: Date;
}

export interface CustodyExtensionPoint extends PluginInstance {
  /** Key id of the key `sign` uses now (JWKS `kid`, token header `kid`). */
  keyId(): Promise<string>;
  /** Public half as an EC P-256 JWK (`kty: 'EC', crv: 'P-256', x, y`). */
  getPublicJwk(): Promise<JWK>;
  /** ES256 signature of `bytes`: 64-byte raw r‖s. */
  sign(bytes: Uint8Array): Promise<Uint8Array>;
  /** db custody only: create the first active key (no-op if one is active). */
  generate?(): Promise<GeneratedKey>;
  /** db custody only: active → retiring, a new key becomes active. */
  rotate?(): Promise<GeneratedKey>;
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
