// Encryption of `svc run remote` uploads (spec "Authentication" 8): the working-tree overlay and
// the developer's secrets travel as boxes only the orchestrator can open. A box is
//   "SVCX1" | ephemeral X25519 public key (32) | IV (12) | AES-256-GCM ciphertext | tag (16)
// and its key is HKDF-SHA256 over the X25519 shared secret of the sender's ephemeral key and the
// orchestrator's key, salted with the ephemeral public key, so every box has its own key. The
// orchestrator derives a box's key when it needs the plaintext, or hands the key of the overlay
// box to the agents of the run (over their authenticated socket) so they open it themselves.
import { createCipheriv, createDecipheriv, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { InputError } from './errors.ts';

const MAGIC = Buffer.from('SVCX1');
const PUBLIC_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
export const BOX_HEADER_BYTES = MAGIC.length + PUBLIC_BYTES + IV_BYTES;
const INFO = Buffer.from('svc run-remote box v1');
// DER prefixes of raw X25519 keys (RFC 8410): SubjectPublicKeyInfo and PKCS#8.
const SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

/** A raw 32-byte X25519 public key → KeyObject. */
export function x25519PublicKey(raw: Buffer): KeyObject {
  if (raw.length !== PUBLIC_BYTES) throw new InputError('SVC_ERR_REMOTE_RUN_KEY_INVALID', `an X25519 public key is ${PUBLIC_BYTES} bytes, not ${raw.length}`);
  return createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
}

/** A raw 32-byte X25519 private key (any 32 bytes: X25519 clamps them) → KeyObject. */
export function x25519PrivateKey(raw: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' });
}

/** The raw 32 bytes of an X25519 public key. */
export function rawPublicKey(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length));
}

function deriveKey(privateKey: KeyObject, publicKey: KeyObject, ephemeralPublic: Buffer): Buffer {
  const shared = diffieHellman({ privateKey, publicKey });
  return Buffer.from(hkdfSync('sha256', shared, ephemeralPublic, INFO, 32));
}

/** Seals `plaintext` for the holder of `recipientPublic` (raw 32 bytes). */
export function sealBox(recipientPublic: Buffer, plaintext: Buffer): Buffer {
  const recipient = x25519PublicKey(recipientPublic);
  const ephemeral = generateKeyPairSync('x25519');
  const ephemeralPublic = rawPublicKey(ephemeral.publicKey);
  const key = deriveKey(ephemeral.privateKey, recipient, ephemeralPublic);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(MAGIC);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([MAGIC, ephemeralPublic, iv, body, cipher.getAuthTag()]);
}

/** The ephemeral public key of a box (from its first bytes). */
export function boxEphemeralKey(header: Buffer): Buffer {
  if (header.length < BOX_HEADER_BYTES || !header.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new InputError('SVC_ERR_REMOTE_RUN_BOX_INVALID', 'not an svc run-remote box (bad header); upload it again with a current svc');
  }
  return Buffer.from(header.subarray(MAGIC.length, MAGIC.length + PUBLIC_BYTES));
}

/** The AES key of a box whose ephemeral public key is `ephemeralPublic`, for the recipient's private key. */
export function boxKey(recipientPrivate: KeyObject, ephemeralPublic: Buffer): Buffer {
  return deriveKey(recipientPrivate, x25519PublicKey(ephemeralPublic), ephemeralPublic);
}

/** Opens a whole box with its AES key; throws when it was altered or the key is not its key. */
export function openBoxWithKey(key: Buffer, box: Buffer): Buffer {
  boxEphemeralKey(box);
  if (box.length < BOX_HEADER_BYTES + TAG_BYTES) throw new InputError('SVC_ERR_REMOTE_RUN_BOX_INVALID', 'the box is truncated');
  const iv = box.subarray(MAGIC.length + PUBLIC_BYTES, BOX_HEADER_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(MAGIC);
  decipher.setAuthTag(box.subarray(box.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(box.subarray(BOX_HEADER_BYTES, box.length - TAG_BYTES)), decipher.final()]);
  } catch {
    throw new InputError('SVC_ERR_REMOTE_RUN_BOX_INVALID', 'the box does not open (altered, truncated, or sealed for another key)');
  }
}

/** Opens a box with the recipient's private key. */
export function openBox(recipientPrivate: KeyObject, box: Buffer): Buffer {
  return openBoxWithKey(boxKey(recipientPrivate, boxEphemeralKey(box)), box);
}
