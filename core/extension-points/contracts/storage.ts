// The storage contract: whole-object writes, streaming, idempotent delete, sorted paginated
// lists, atomic copy, hostile keys refused by every method, and pre-signed URLs that work over
// real HTTP. Every point gets a fresh, empty storage (the harness's config makes new state).
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { setImmediate as tick } from 'node:timers/promises';
import type { StorageExtensionPoint } from '../storage.ts';
import { expect, expectEqual, expectRejects, show } from './check.ts';
import { HOSTILE_KEYS, HOSTILE_PREFIXES, allKeys, digestOf, generated, readAll, slowFill } from './storage-bodies.ts';
import type { BaseHarness, ContractContext, ContractPoint, ContractSuite } from './types.ts';

export { HOSTILE_KEYS, HOSTILE_PREFIXES } from './storage-bodies.ts';

/**
 * A storage whose URLs the kernel serves (`httpRoutes`, e.g. filesystem) needs them mounted on a
 * real listener in `prepare`; core/testing's `servedStorageHarness` does that.
 */
export interface StorageHarness extends BaseHarness<'storage'> {
  /** Size of the large streamed body, default 20 MiB. */
  largeBodyBytes?: number;
}

type Ctx = ContractContext<'storage', StorageHarness>;
const text = async (s: StorageExtensionPoint, key: string): Promise<string> => (await readAll(await s.get(key))).toString();
const NOT_FOUND = { code: 'SVC_ERR_STORAGE_NOT_FOUND', kind: 'not_found' };

async function expectBody(response: Response, status: number, what: string): Promise<Buffer> {
  const body = Buffer.from(await response.arrayBuffer());
  expectEqual(response.status, status, `${what}: HTTP status (body ${show(body.toString('utf8').slice(0, 200))})`);
  return body;
}

const roundTrip: ContractPoint<'storage', StorageHarness>[] = [
  {
    point: 'put/get/head: round-trips Buffers, Uint8Arrays and streams',
    async run({ instance: s }: Ctx) {
      const buffer = Buffer.from('hello storage');
      const put = await s.put('source/v2/org-1/abc.tar.gz', buffer);
      expectEqual(put.size, buffer.length, 'put().size');
      expect((await readAll(await s.get('source/v2/org-1/abc.tar.gz'))).equals(buffer), 'get returns the bytes put');
      await s.put('u8', new Uint8Array([1, 2, 3]));
      expectEqual([...(await readAll(await s.get('u8')))], [1, 2, 3], 'Uint8Array body');
      await s.put('stream', Readable.from([Buffer.from('a'), Buffer.from('bc')]), { contentType: 'text/plain' });
      expectEqual(await text(s, 'stream'), 'abc', 'stream body');
      const info = await s.head('source/v2/org-1/abc.tar.gz');
      expect(info !== null, 'head of a stored object is not null');
      expectEqual(info.size, buffer.length, 'head().size');
      expect(info.modifiedAt instanceof Date && Math.abs(info.modifiedAt.getTime() - Date.now()) < 300_000, `head().modifiedAt must be a recent Date, got ${show(info.modifiedAt)}`);
      if (put.etag !== undefined) expectEqual(info.etag, put.etag, 'head().etag equals put().etag');
    },
  },
  {
    point: 'get/head: a missing object is NotFound and null; a folder of keys is not an object',
    async run({ instance: s }: Ctx) {
      await expectRejects(() => s.get('nope/missing.bin'), NOT_FOUND, 'get(missing)');
      expectEqual(await s.head('nope/missing.bin'), null, 'head(missing)');
      await s.put('folder/inner', Buffer.from('x'));
      await expectRejects(() => s.get('folder'), NOT_FOUND, 'get(folder)');
      expectEqual(await s.head('folder'), null, 'head(folder)');
    },
  },
  {
    point: 'put: an overwrite replaces the whole object; empty objects work',
    async run({ instance: s }: Ctx) {
      await s.put('k', Buffer.from('a much longer first version'));
      const first = await s.head('k');
      await s.put('k', Buffer.from('short'));
      expectEqual(await text(s, 'k'), 'short', 'the overwritten object');
      const second = await s.head('k');
      expectEqual(second?.size, 5, 'size after overwrite');
      if (first?.etag !== undefined) expect(second?.etag !== first.etag, 'the etag changes with the content');
      await s.put('empty', Buffer.alloc(0));
      expectEqual((await s.head('empty'))?.size, 0, 'empty object size');
      expectEqual((await readAll(await s.get('empty'))).length, 0, 'empty object bytes');
    },
  },
  {
    point: 'delete: idempotent, and the object is gone',
    async run({ instance: s }: Ctx) {
      await s.put('d/1', Buffer.from('x'));
      await s.delete('d/1');
      expectEqual(await s.head('d/1'), null, 'head after delete');
      await expectRejects(() => s.get('d/1'), NOT_FOUND, 'get after delete');
      await s.delete('d/1');
      await s.delete('never/was/here');
      expectEqual(await allKeys(s), [], 'keys left');
    },
  },
  {
    point: 'put/get: streams a large body in and out unchanged',
    async run({ instance: s, harness }: Ctx) {
      const size = harness.largeBodyBytes ?? 20 * 1024 * 1024;
      const body = generated(size, 7);
      expectEqual((await s.put('big/large.bin', body.stream)).size, size, 'put().size');
      expectEqual((await s.head('big/large.bin'))?.size, size, 'head().size');
      expectEqual(await digestOf(await s.get('big/large.bin')), { digest: body.digest, size }, 'sha256 and size read back');
    },
  },
  {
    point: 'put: a failing body stream stores nothing and keeps the old object',
    async run({ instance: s }: Ctx) {
      await s.put('fragile', Buffer.from('old'));
      let sent = 0;
      const broken = new Readable({
        read() {
          if (sent++ < 3) this.push(Buffer.alloc(64 * 1024, 1));
          else this.destroy(new Error('connection lost'));
        },
      });
      let failed = false;
      await s.put('fragile', broken).catch(() => (failed = true));
      expect(failed, 'put with a failing body resolved');
      expectEqual(await text(s, 'fragile'), 'old', 'the old object');
      failed = false;
      const broken2 = new Readable({ read() { this.destroy(new Error('connection lost')); } });
      await s.put('never-written', broken2).catch(() => (failed = true));
      expect(failed, 'put with a body failing at once resolved');
      expectEqual(await s.head('never-written'), null, 'head of the never-written key');
      expectEqual(await allKeys(s), ['fragile'], 'keys (no temp objects visible)');
    },
  },
  {
    point: 'put: concurrent writers to one key, one whole body wins, readers never see a torn object',
    async run({ instance: s }: Ctx) {
      const size = 512 * 1024;
      const fills = [1, 2, 3, 4, 5, 6];
      const writers = fills.map((fill) => s.put('race/key', slowFill(fill, size, 16 * 1024)));
      const torn: string[] = [];
      const readers = (async () => {
        for (let i = 0; i < 30; i++) {
          try {
            const bytes = await readAll(await s.get('race/key'));
            if (bytes.length !== size || !bytes.every((b) => b === bytes[0])) torn.push(`read ${i}: ${bytes.length} bytes`);
          } catch (error) {
            if ((error as { code?: string }).code !== 'SVC_ERR_STORAGE_NOT_FOUND') throw error;
          }
          await tick();
        }
      })();
      await Promise.all(writers);
      await readers;
      expectEqual(torn, [], 'torn reads');
      const final = await readAll(await s.get('race/key'));
      expect(final.length === size && fills.includes(final[0]!) && final.every((b) => b === final[0]), 'the final object is one writer\'s whole body');
      expectEqual(await allKeys(s), ['race/key'], 'keys (no temp objects visible)');
    },
  },
];

const listing: ContractPoint<'storage', StorageHarness>[] = [
  {
    point: 'list: sorted, filtered by prefix, paginated',
    async run({ instance: s }: Ctx) {
      const keys = ['a/1', 'a/2', 'a/10', 'a/b/1', 'a/b/c/d', 'a-c', 'ab', 'b/x', 'cache/org-1/x', 'cache/org-12/y', 'z'];
      for (const [i, key] of keys.entries()) await s.put(key, Buffer.alloc(i + 1, 'x'));
      const sorted = [...keys].sort();
      const all = await s.list('');
      expectEqual(all.objects.map((o) => o.key), sorted, "list('')");
      expectEqual(all.next, null, "list('').next");
      expectEqual(all.objects.find((o) => o.key === 'a/10')?.size, 3, 'listed size');
      expectEqual((await s.list('a/')).objects.map((o) => o.key), ['a/1', 'a/10', 'a/2', 'a/b/1', 'a/b/c/d'], "list('a/')");
      expectEqual((await s.list('a')).objects.map((o) => o.key), ['a-c', 'a/1', 'a/10', 'a/2', 'a/b/1', 'a/b/c/d', 'ab'], "list('a')");
      expectEqual((await s.list('cache/org-1/')).objects.map((o) => o.key), ['cache/org-1/x'], "list('cache/org-1/') must not see org-12");
      expectEqual((await s.list('nothing/here/')).objects, [], 'an empty prefix');
      for (const [prefix, limit] of [['', 2], ['a/', 3], ['a', 1]] as const) {
        const seen: string[] = [];
        let after: string | undefined;
        for (let pages = 0; pages < 50; pages++) {
          const page = await s.list(prefix, after === undefined ? { limit } : { limit, after });
          expect(page.objects.length <= limit, `a page of limit ${limit} held ${page.objects.length}`);
          seen.push(...page.objects.map((o) => o.key));
          if (page.next === null) break;
          expectEqual(page.next, page.objects[page.objects.length - 1]?.key, 'next is the last key of the page');
          after = page.next;
        }
        expectEqual(seen, sorted.filter((k) => k.startsWith(prefix)), `pages of ${limit} under "${prefix}"`);
      }
      expectEqual((await s.list('', { limit: 11 })).next, null, 'an exactly full last page has no next');
      for (const limit of [0, -1, 1.5, 1001, Number.NaN]) {
        await expectRejects(() => s.list('', { limit }), { code: 'SVC_ERR_STORAGE_LIST_LIMIT', kind: 'input' }, `list limit ${limit}`);
      }
    },
  },
  {
    point: 'copy: atomic, the source untouched, a missing source refused',
    async run({ instance: s }: Ctx) {
      await s.put('staging/abc', Buffer.from('payload'));
      await s.copy('staging/abc', 'final/abc');
      expectEqual(await text(s, 'final/abc'), 'payload', 'the copy');
      expectEqual(await text(s, 'staging/abc'), 'payload', 'the source');
      await s.put('staging/abc', Buffer.from('second'));
      await s.copy('staging/abc', 'final/abc');
      expectEqual(await text(s, 'final/abc'), 'second', 'copy overwrites');
      await s.copy('final/abc', 'final/abc');
      expectEqual(await text(s, 'final/abc'), 'second', 'copy onto itself');
      await expectRejects(() => s.copy('staging/missing', 'final/x'), NOT_FOUND, 'copy from a missing key');
      expectEqual(await allKeys(s), ['final/abc', 'staging/abc'], 'keys');
    },
  },
];

const hostile: ContractPoint<'storage', StorageHarness>[] = [
  {
    point: 'keys: hostile keys are refused by every method and change nothing',
    async run({ instance: s }: Ctx) {
      await s.put('safe/key', Buffer.from('safe'));
      const invalid = { code: 'SVC_ERR_STORAGE_KEY_INVALID', kind: 'input' };
      for (const key of HOSTILE_KEYS) {
        const k = key as string;
        const name = show(key);
        await expectRejects(() => s.put(k, Buffer.from('evil')), invalid, `put ${name}`);
        await expectRejects(() => s.put(k, Readable.from([Buffer.from('evil')])), invalid, `put stream ${name}`);
        await expectRejects(() => s.get(k), invalid, `get ${name}`);
        await expectRejects(() => s.head(k), invalid, `head ${name}`);
        await expectRejects(() => s.delete(k), invalid, `delete ${name}`);
        await expectRejects(() => s.copy('safe/key', k), invalid, `copy to ${name}`);
        await expectRejects(() => s.copy(k, 'safe/copy'), invalid, `copy from ${name}`);
        await expectRejects(() => s.presign({ method: 'GET', key: k }), invalid, `presign GET ${name}`);
        await expectRejects(() => s.presign({ method: 'PUT', key: k }), invalid, `presign PUT ${name}`);
      }
      for (const prefix of HOSTILE_PREFIXES) await expectRejects(() => s.list(prefix as string), invalid, `list ${show(prefix)}`);
      expectEqual(await allKeys(s), ['safe/key'], 'keys after the hostile calls');
      expectEqual(await text(s, 'safe/key'), 'safe', 'the safe object');
    },
  },
  {
    point: 'keys: unusual but valid keys round-trip',
    async run({ instance: s }: Ctx) {
      const keys = ['..a', 'a..', 'a/...', 'dots.in.name/.hidden', 'spaces in name', 'ünïcødé/ключ', 'sym=bols&more?#%', 's'.repeat(255)];
      for (const key of keys) {
        await s.put(key, Buffer.from(key));
        expectEqual(await text(s, key), key, `round-trip ${show(key)}`);
      }
      expectEqual(await allKeys(s), [...keys].sort(), 'keys');
    },
  },
];

const presigned: ContractPoint<'storage', StorageHarness>[] = [
  {
    point: 'presign: expiry and method bounds are enforced',
    async run({ instance: s }: Ctx) {
      for (const expiresInSeconds of [0, -5, 1.5, 604_801]) {
        await expectRejects(() => s.presign({ method: 'GET', key: 'k', expiresInSeconds }), { code: 'SVC_ERR_STORAGE_PRESIGN_EXPIRY' }, `expiry ${expiresInSeconds}`);
      }
      await expectRejects(() => s.presign({ method: 'DELETE' as 'GET', key: 'k' }), { code: 'SVC_ERR_STORAGE_PRESIGN_METHOD' }, 'method DELETE');
    },
  },
  {
    point: 'presign: PUT and GET URLs work over real HTTP without credentials',
    async run({ instance: s }: Ctx) {
      const key = 'deps/linux-x64/abc.tar.gz';
      const put = await s.presign({ method: 'PUT', key });
      const get = await s.presign({ method: 'GET', key, expiresInSeconds: 60 });
      expect(URL.canParse(put) && URL.canParse(get), `pre-signed URLs must be absolute URLs, got ${show(put)} and ${show(get)}`);
      const body = randomBytes(300_000);
      await expectBody(await fetch(put, { method: 'PUT', body }), 200, 'PUT through the pre-signed URL');
      expect((await readAll(await s.get(key))).equals(body), 'the object holds the bytes uploaded through the URL');
      const downloaded = await expectBody(await fetch(get), 200, 'GET through the pre-signed URL');
      expect(downloaded.equals(body), 'GET through the pre-signed URL returned other bytes');
      const forged = new URL(get);
      forged.search = new URL(put).search;
      const refused = await fetch(forged);
      await refused.arrayBuffer();
      expect(refused.status >= 400 && refused.status < 500, `a PUT signature used for GET must be refused, got HTTP ${refused.status}`);
    },
  },
];

export const storageContract: ContractSuite<'storage', StorageHarness> = {
  kind: 'storage',
  points: [...roundTrip, ...listing, ...hostile, ...presigned],
};
