// Pre-signed URL routes on a real fastify listener over loopback, with real HTTP requests.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import fastify from 'fastify';
import t from 'tap';
import { FilesystemStorage, encodeKeyForUrl, signStoragePath, storageRoutes } from '../../../../plugins/storage/filesystem/index.ts';

const SECRET = 's'.repeat(48);

interface Served {
  storage: FilesystemStorage;
  address: string;
  port: number;
  dir: string;
}

async function serve(t: { teardown(fn: () => unknown): void }, options: { maxUploadBytes?: number } = {}): Promise<Served> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-fs-routes-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const address0 = 'http://127.0.0.1:0';
  const storage = new FilesystemStorage({ root: join(dir, 'root'), presign: { publicBaseUrl: address0, secret: SECRET, prefix: '/storage' } });
  await storage.init();
  const app = fastify({ forceCloseConnections: true });
  await app.register(storageRoutes, { storage, secret: SECRET, ...options });
  // A JSON route next to ours: our raw-body parser must not leak out of its context.
  app.post('/echo', async (request) => ({ got: request.body }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  return { storage, address, port: Number(new URL(address).port), dir };
}

function signed(s: Served, method: 'GET' | 'PUT', key: string, expires = Math.floor(Date.now() / 1000) + 60, secret = SECRET): string {
  return `${s.address}/storage/${encodeKeyForUrl(key)}?expires=${expires}&sig=${signStoragePath(secret, method, `/storage/${key}`, expires)}`;
}

async function errorOf(response: Response): Promise<{ status: number; code: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, code: body.error.code };
}

/** Raw HTTP: the exact path bytes go on the wire (fetch would normalize `..`). */
function raw(port: number, method: string, path: string, body?: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: body ? { 'content-length': body.length } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function files(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String).sort();
}

t.test('GET streams the object with content-length; HEAD sends headers only', async (t) => {
  const s = await serve(t);
  const body = randomBytes(123_457);
  await s.storage.put('deps/linux-x64/abc.tar.gz', body);
  const url = await s.storage.presign({ method: 'GET', key: 'deps/linux-x64/abc.tar.gz' });
  const response = await fetch(url.replace('http://127.0.0.1:0', s.address));
  t.equal(response.status, 200);
  t.equal(response.headers.get('content-length'), String(body.length));
  t.equal(response.headers.get('content-type'), 'application/octet-stream');
  t.equal(response.headers.get('etag'), (await s.storage.head('deps/linux-x64/abc.tar.gz'))?.etag);
  t.same(Buffer.from(await response.arrayBuffer()), body);

  const head = await fetch(signed(s, 'GET', 'deps/linux-x64/abc.tar.gz'), { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.headers.get('content-length'), String(body.length));
  t.equal((await head.arrayBuffer()).byteLength, 0);

  const missing = await fetch(signed(s, 'GET', 'deps/none'));
  t.same(await errorOf(missing), { status: 404, code: 'SVC_ERR_STORAGE_NOT_FOUND' });
});

t.test('expired URLs are refused with SVC_ERR_STORAGE_URL_EXPIRED', async (t) => {
  const s = await serve(t);
  await s.storage.put('k', Buffer.from('v'));
  const past = Math.floor(Date.now() / 1000) - 1;
  t.same(await errorOf(await fetch(signed(s, 'GET', 'k', past))), { status: 403, code: 'SVC_ERR_STORAGE_URL_EXPIRED' });
  t.same(await errorOf(await fetch(signed(s, 'PUT', 'k', past), { method: 'PUT', body: 'new' })), {
    status: 403,
    code: 'SVC_ERR_STORAGE_URL_EXPIRED',
  });
  t.equal(Buffer.concat(await (await s.storage.get('k')).toArray()).toString(), 'v', 'expired PUT changed nothing');
});

t.test('bad signatures are refused with SVC_ERR_STORAGE_URL_SIGNATURE', async (t) => {
  const s = await serve(t);
  await s.storage.put('a/k', Buffer.from('v'));
  await s.storage.put('a/other', Buffer.from('w'));
  const good = new URL(signed(s, 'GET', 'a/k'));
  const sig = good.searchParams.get('sig') as string;
  const expires = good.searchParams.get('expires') as string;
  const flipped = `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`;
  const cases: Record<string, string> = {
    'flipped signature': `${s.address}/storage/a/k?expires=${expires}&sig=${flipped}`,
    'extended expiry': `${s.address}/storage/a/k?expires=${Number(expires) + 3600}&sig=${sig}`,
    'other key, same signature': `${s.address}/storage/a/other?expires=${expires}&sig=${sig}`,
    'no signature': `${s.address}/storage/a/k?expires=${expires}`,
    'no expiry': `${s.address}/storage/a/k?sig=${sig}`,
    'nothing at all': `${s.address}/storage/a/k`,
    'uppercase hex': `${s.address}/storage/a/k?expires=${expires}&sig=${sig.toUpperCase()}`,
    'short signature': `${s.address}/storage/a/k?expires=${expires}&sig=abcd`,
    'negative expiry': `${s.address}/storage/a/k?expires=-1&sig=${sig}`,
    'PUT signature used for GET': signed(s, 'PUT', 'a/k').replace(/^/, ''),
    'wrong secret': signed(s, 'GET', 'a/k', undefined, 'z'.repeat(48)),
  };
  for (const [name, url] of Object.entries(cases)) {
    t.same(await errorOf(await fetch(url)), { status: 403, code: 'SVC_ERR_STORAGE_URL_SIGNATURE' }, name);
  }
  const putWithGetSig = await fetch(signed(s, 'GET', 'a/k'), { method: 'PUT', body: 'overwrite' });
  t.same(await errorOf(putWithGetSig), { status: 403, code: 'SVC_ERR_STORAGE_URL_SIGNATURE' }, 'GET signature used for PUT');
  t.equal(Buffer.concat(await (await s.storage.get('a/k')).toArray()).toString(), 'v');
});

t.test('hostile paths are refused before anything is touched', async (t) => {
  const s = await serve(t);
  const expires = Math.floor(Date.now() / 1000) + 60;
  const paths = [
    '/storage/..%2F..%2Fetc%2Fpasswd',
    '/storage/a%2F..%2F..%2Fx',
    '/storage/%2e%2e/%2e%2e/x',
    '/storage/a/../../x',
    '/storage/./x',
    '/storage/a%00b',
    '/storage/a%5Cb',
    '/storage/%5C..%5Cx',
    '/storage/a//b',
    '/storage/',
    '/storage/a%0Ab',
    '/storage/bad%ZZ',
    '/storage/%ED%A0%80',
  ];
  for (const path of paths) {
    // Even a signature made for the hostile key itself does not help.
    const decoded = (() => {
      try {
        return decodeURIComponent(path.slice('/storage/'.length));
      } catch {
        return 'x';
      }
    })();
    const query = `?expires=${expires}&sig=${signStoragePath(SECRET, 'PUT', `/storage/${decoded}`, expires)}`;
    const put = await raw(s.port, 'PUT', path + query, Buffer.from('pwned'));
    const get = await raw(s.port, 'GET', path + query.replace(/sig=[0-9a-f]+/, `sig=${signStoragePath(SECRET, 'GET', `/storage/${decoded}`, expires)}`));
    for (const [method, result] of [
      ['PUT', put],
      ['GET', get],
    ] as const) {
      // Paths that escape the prefix entirely never reach our route (404 from the router).
      t.ok([400, 404].includes(result.status), `${method} ${path} → ${result.status}`);
      // Undecodable URLs are refused by fastify's router before our handler runs.
      if (result.status === 400) t.match(result.body, /SVC_ERR_STORAGE_KEY_INVALID|FST_ERR_BAD_URL/);
    }
  }
  t.same(await files(s.dir), ['root'], 'nothing written anywhere');
});

t.test('PUT streams the body to storage atomically, whatever its content type', async (t) => {
  const s = await serve(t);
  const size = 20 * 1024 * 1024;
  const hash = createHash('sha256');
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= size) {
        controller.close();
        return;
      }
      const chunk = randomBytes(Math.min(256 * 1024, size - sent));
      sent += chunk.length;
      hash.update(chunk);
      controller.enqueue(chunk);
    },
  });
  const response = await fetch(signed(s, 'PUT', 'big/upload.bin'), { method: 'PUT', body: stream, duplex: 'half' } as RequestInit);
  t.equal(response.status, 200, 'chunked 20 MB upload');
  t.equal(response.headers.get('etag'), (await s.storage.head('big/upload.bin'))?.etag);
  const stored = createHash('sha256');
  for await (const chunk of await s.storage.get('big/upload.bin')) stored.update(chunk as Buffer);
  t.equal(stored.digest('hex'), hash.digest('hex'));

  const json = await fetch(signed(s, 'PUT', 'raw.json'), { method: 'PUT', body: '{"not": parsed', headers: { 'content-type': 'application/json' } });
  t.equal(json.status, 200);
  t.equal(Buffer.concat(await (await s.storage.get('raw.json')).toArray()).toString(), '{"not": parsed', 'bytes stored as sent');
  const empty = await fetch(signed(s, 'PUT', 'empty'), { method: 'PUT' });
  t.equal(empty.status, 200);
  t.equal((await s.storage.head('empty'))?.size, 0);

  const echo = await fetch(`${s.address}/echo`, { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } });
  t.same(await echo.json(), { got: { a: 1 } }, 'routes outside storage keep JSON parsing');
});

t.test('uploads over the limit are refused and store nothing', async (t) => {
  const s = await serve(t, { maxUploadBytes: 1000 });
  const declared = await fetch(signed(s, 'PUT', 'too/big'), { method: 'PUT', body: Buffer.alloc(1001) });
  t.same(await errorOf(declared), { status: 413, code: 'SVC_ERR_STORAGE_TOO_LARGE' });
  const ok = await fetch(signed(s, 'PUT', 'fits'), { method: 'PUT', body: Buffer.alloc(1000) });
  t.equal(ok.status, 200);

  // Chunked, so the size is only known while streaming: refused, or the connection is cut.
  let pushed = 0;
  const chunked = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pushed++ < 4) controller.enqueue(new Uint8Array(400));
      else controller.close();
    },
  });
  const outcome = await fetch(signed(s, 'PUT', 'too/chunked'), { method: 'PUT', body: chunked, duplex: 'half' } as RequestInit).then(
    async (r) => (await errorOf(r)).status,
    () => 'connection closed',
  );
  t.ok(outcome === 413 || outcome === 'connection closed', `chunked over-limit: ${outcome}`);
  t.equal(await s.storage.head('too/big'), null);
  t.equal(await s.storage.head('too/chunked'), null);
  t.same(await files(join(s.dir, 'root')), ['fits', 'too'], 'no temp files');
});

t.test('a broken upload leaves nothing and keeps the previous object', async (t) => {
  const s = await serve(t);
  await s.storage.put('obj', Buffer.from('previous'));
  for (const key of ['obj', 'fresh']) {
    const expires = Math.floor(Date.now() / 1000) + 60;
    const path = `/storage/${key}?expires=${expires}&sig=${signStoragePath(SECRET, 'PUT', `/storage/${key}`, expires)}`;
    await new Promise<void>((resolve) => {
      const req = httpRequest({ host: '127.0.0.1', port: s.port, method: 'PUT', path, headers: { 'content-length': 1_000_000 } });
      req.on('error', () => resolve());
      req.write(Buffer.alloc(200_000, 7), () => {
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 50);
      });
    });
    // The server notices the reset asynchronously: wait (bounded) until its temp file is gone.
    let leftovers: string[] = [];
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
      leftovers = (await files(join(s.dir, 'root'))).filter((f) => f.startsWith('.svc-tmp-'));
      if (leftovers.length === 0) break;
      await sleep(20);
    }
    t.same(leftovers, [], `no partial upload of ${key} remains`);
  }
  t.equal(Buffer.concat(await (await s.storage.get('obj')).toArray()).toString(), 'previous');
  t.equal(await s.storage.head('fresh'), null);
});
