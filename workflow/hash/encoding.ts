// The byte-level rules every digest of the compiler shares (documented in docs/content-hash.md):
// text detection, CRLF→LF normalization, and the length-prefixed entry encoding. Changing any of
// this changes every hash, so it needs a compileSchemaVersion bump.
import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';

/** A file is binary when a NUL byte occurs in its first 8000 bytes (git's heuristic). */
export const BINARY_SNIFF_BYTES = 8000;
/** Files larger than this are hashed in chunks instead of being read whole. */
export const STREAM_THRESHOLD_BYTES = 8 * 1024 * 1024;
const CHUNK_BYTES = 1024 * 1024;
const CR = 0x0d;
const LF = 0x0a;
const CR_BYTE = Buffer.from([CR]);

export function isBinary(content: Buffer): boolean {
  return content.subarray(0, BINARY_SNIFF_BYTES).indexOf(0) !== -1;
}

/** Every CR immediately followed by LF is dropped; a lone CR stays. Returns the input when it has no CR. */
export function normalizeLineEndings(content: Buffer): Buffer {
  let cr = content.indexOf(CR);
  if (cr === -1) return content;
  const out = Buffer.allocUnsafe(content.length);
  let written = 0;
  let read = 0;
  while (cr !== -1) {
    if (content[cr + 1] === LF) {
      written += content.copy(out, written, read, cr);
      read = cr + 1;
    }
    cr = content.indexOf(CR, cr + 1);
  }
  written += content.copy(out, written, read);
  return out.subarray(0, written);
}

export interface ContentDigest {
  /** SHA-256 of the normalized content (32 raw bytes). */
  digest: Buffer;
  binary: boolean;
  /** Size on disk, before normalization. */
  bytes: number;
}

/** Digest of bytes already in memory: binary content as is, text with CRLF normalized. */
export function digestContent(content: Buffer): ContentDigest {
  const binary = isBinary(content);
  const normalized = binary ? content : normalizeLineEndings(content);
  return { digest: createHash('sha256').update(normalized).digest(), binary, bytes: content.length };
}

/**
 * Digest of a file on disk. Small files are read whole; large ones in chunks with the same
 * result (a CR at a chunk end is held until the next chunk shows whether an LF follows).
 */
export async function digestFile(absPath: string, streamAbove: number = STREAM_THRESHOLD_BYTES): Promise<ContentDigest> {
  const handle = await open(absPath, 'r');
  try {
    const { size } = await handle.stat();
    if (size <= streamAbove) return digestContent(await handle.readFile());
    const hash = createHash('sha256');
    const buffer = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, BINARY_SNIFF_BYTES));
    let binary: boolean | undefined;
    let pendingCr = false;
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      let chunk = buffer.subarray(0, bytesRead);
      // The sniff window lies within the first chunk because a chunk is at least 8000 bytes.
      if (binary === undefined) binary = isBinary(chunk);
      total += bytesRead;
      if (binary) {
        hash.update(chunk);
        continue;
      }
      if (pendingCr) {
        if (chunk[0] !== LF) hash.update(CR_BYTE);
        pendingCr = false;
      }
      if (chunk[chunk.length - 1] === CR) {
        pendingCr = true;
        chunk = chunk.subarray(0, -1);
      }
      hash.update(normalizeLineEndings(chunk));
    }
    if (pendingCr) hash.update(CR_BYTE);
    return { digest: hash.digest(), binary: binary ?? false, bytes: total };
  } finally {
    await handle.close();
  }
}

export interface DigestEntry {
  /** POSIX relative path, UTF-8 encoded in the digest. */
  path: string;
  /** SHA-256 of the entry's normalized content (32 raw bytes). */
  digest: Buffer;
}

/** Byte order of the UTF-8 encodings (not JS's UTF-16 order, which differs above U+FFFF). */
export function comparePaths(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

export function sortEntries<T extends { path: string }>(entries: T[]): T[] {
  const keyed = entries.map((entry) => ({ entry, key: Buffer.from(entry.path, 'utf8') }));
  keyed.sort((x, y) => Buffer.compare(x.key, y.key));
  return keyed.map((k) => k.entry);
}

function updateEntry(hash: Hash, entry: DigestEntry): void {
  const path = Buffer.from(entry.path, 'utf8');
  const length = Buffer.allocUnsafe(8);
  length.writeBigUInt64BE(BigInt(path.length));
  hash.update(length);
  hash.update(path);
  hash.update(entry.digest);
}

/**
 * SHA-256 over `u64be(len(path)) ‖ path ‖ sha256(content)` for each entry, sorted by path bytes.
 * The path is length-prefixed and the content digest fixed-size, so no two lists share an input.
 */
export function digestEntries(entries: DigestEntry[]): string {
  const hash = createHash('sha256');
  for (const entry of sortEntries(entries)) updateEntry(hash, entry);
  return hash.digest('hex');
}

export function sha256Hex(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}
