// Bodies and readers the storage contract streams through a storage: deterministic large
// bodies with their digest, slow bodies that make concurrent writers interleave, full reads.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import type { StorageExtensionPoint } from '../storage.ts';

export async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

/** Deterministic stream of `total` bytes in 64 KiB chunks, with its sha256. */
export function generated(total: number, seed: number): { stream: Readable; digest: string } {
  const hash = createHash('sha256');
  const chunks: Buffer[] = [];
  const chunkSize = 64 * 1024;
  let state = seed >>> 0;
  for (let done = 0; done < total; done += chunkSize) {
    const chunk = Buffer.allocUnsafe(Math.min(chunkSize, total - done));
    for (let i = 0; i < chunk.length; i++) {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      chunk[i] = state >>> 24;
    }
    hash.update(chunk);
    chunks.push(chunk);
  }
  let index = 0;
  const stream = new Readable({
    read() {
      this.push(index < chunks.length ? chunks[index++] : null);
    },
  });
  return { stream, digest: hash.digest('hex') };
}

export async function digestOf(stream: Readable): Promise<{ digest: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Uint8Array);
    size += (chunk as Uint8Array).length;
  }
  return { digest: hash.digest('hex'), size };
}

/** A body of `size` bytes all equal to `fill`, streamed slowly so concurrent writers interleave. */
export function slowFill(fill: number, size: number, chunk: number): Readable {
  let sent = 0;
  return new Readable({
    async read() {
      await tick();
      if (sent >= size) {
        this.push(null);
        return;
      }
      const n = Math.min(chunk, size - sent);
      sent += n;
      this.push(Buffer.alloc(n, fill));
    },
  });
}

export async function allKeys(storage: StorageExtensionPoint): Promise<string[]> {
  const keys: string[] = [];
  let after: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const result = await storage.list('', after === undefined ? {} : { after });
    keys.push(...result.objects.map((o) => o.key));
    if (result.next === null) return keys;
    after = result.next;
  }
  throw new Error('list did not finish within 1000 pages');
}

/** Keys no storage may accept: each must fail with SVC_ERR_STORAGE_KEY_INVALID and change nothing. */
export const HOSTILE_KEYS: readonly unknown[] = [
  '', '/', '/etc/passwd', '//etc/passwd', '..', '.', '../x', '../../../../../../etc/passwd', 'a/../../x', 'a/..', 'a/../b',
  './a', 'a/./b', 'a/.', 'a//b', 'a/', 'a\\b', '..\\..\\x', 'C:\\Windows\\win.ini', 'a\u0000b', '\u0000', 'a/b\u0000/../../x',
  'a\nb', 'a\rb', 'tab\there', 'del\u007f', '\uD800', 'x'.repeat(1025), `a/${'y'.repeat(256)}`, 123, null, undefined, {}, ['a'],
];

export const HOSTILE_PREFIXES: readonly unknown[] = ['/', '/a', '../', 'a/../', 'a//', './', 'a\\', '\u0000', 'a\u0000/', 42, null];
