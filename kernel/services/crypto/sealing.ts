// Sealing secrets at rest under the master key (spec: "Secrets at rest", config versions):
// AES-256-GCM, random 12-byte IV, 16-byte tag, wire format base64(IV ‖ tag ‖ ciphertext).
// The additional data binds a sealed value to where it is stored, so a value copied to another
// field or row does not open there.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { InputError, SvcError } from '../../../core/errors.ts';

export const KEY_BYTES = 32;
export const IV_BYTES = 12;
export const TAG_BYTES = 16;

/** A sealed value did not open: wrong key, tampered bytes, wrong additional data, or not a sealed value. */
export class OpenFailedError extends SvcError {}

export interface NamedKey {
  /** Which key this is, e.g. `current` or `old`; reported back by openWithAny. */
  name: string;
  key: Buffer;
}

function assertKey(key: Buffer): void {
  if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) {
    throw new InputError('SVC_ERR_CRYPTO_KEY_INVALID', `a master key must be exactly ${KEY_BYTES} bytes`);
  }
}

/**
 * Parse a master key as written by an operator: 32 bytes as 64 hex characters or as base64
 * (standard or URL-safe, padding optional). `label` names the setting in the error.
 */
export function parseMasterKey(text: string, label = 'master key'): Buffer {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}={0,1}$/.test(trimmed)) {
    const key = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    if (key.length === KEY_BYTES) return key;
  }
  // Never echo the value: it may be a real key with a typo.
  throw new InputError(
    'SVC_ERR_CRYPTO_KEY_INVALID',
    `${label} must be ${KEY_BYTES} bytes written as 64 hex characters or 44 base64 characters ` +
      `(got ${trimmed.length} characters); generate one with: openssl rand -base64 32`,
  );
}

export function seal(masterKey: Buffer, plaintext: Buffer | string, additionalData: string): string {
  assertKey(masterKey);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', masterKey, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(additionalData, 'utf8'));
  const body = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function decode(sealed: string): Buffer | undefined {
  if (typeof sealed !== 'string' || sealed.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(sealed)) return undefined;
  const bytes = Buffer.from(sealed, 'base64');
  return bytes.length >= IV_BYTES + TAG_BYTES ? bytes : undefined;
}

function tryOpen(key: Buffer, bytes: Buffer, additionalData: string): Buffer | undefined {
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(additionalData, 'utf8'));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    return undefined;
  }
}

function malformed(additionalData: string): OpenFailedError {
  return new OpenFailedError('SVC_ERR_CRYPTO_OPEN_FAILED', `sealed value for ${additionalData} is not a sealed value (bad base64 or too short)`);
}

/** Open a sealed value; throws OpenFailedError (SVC_ERR_CRYPTO_OPEN_FAILED) on any failure. */
export function open(masterKey: Buffer, sealed: string, additionalData: string): Buffer {
  assertKey(masterKey);
  const bytes = decode(sealed);
  if (!bytes) throw malformed(additionalData);
  const plain = tryOpen(masterKey, bytes, additionalData);
  if (!plain) {
    throw new OpenFailedError(
      'SVC_ERR_CRYPTO_OPEN_FAILED',
      `sealed value for ${additionalData} did not open: wrong master key, or the value was altered`,
    );
  }
  return plain;
}

export function openText(masterKey: Buffer, sealed: string, additionalData: string): string {
  return open(masterKey, sealed, additionalData).toString('utf8');
}

/**
 * Try each key in order (current first, then the previous one during rotation) and say which
 * opened it, so callers can re-seal values still under an old key (self-heal).
 */
export function openWithAny(keys: readonly NamedKey[], sealed: string, additionalData: string): { name: string; plaintext: Buffer } {
  for (const { key } of keys) assertKey(key);
  const bytes = decode(sealed);
  if (!bytes) throw malformed(additionalData);
  for (const { name, key } of keys) {
    const plaintext = tryOpen(key, bytes, additionalData);
    if (plaintext) return { name, plaintext };
  }
  const tried = keys.map((k) => k.name).join(', ') || 'none configured';
  throw new OpenFailedError(
    'SVC_ERR_CRYPTO_OPEN_FAILED',
    `sealed value for ${additionalData} opens with none of the master keys (tried: ${tried}); ` +
      'if the master key was rotated, set the previous one as SVC_SECRET_KEY_OLD',
  );
}
