// The storage contract against `filesystem`, plus what only a filesystem can get wrong: escaping
// the root, temp files left behind, folder/object clashes, and signing in through the host.
import { mkdtemp, readdir, rm, writeFile, mkdir, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fastify from 'fastify';
import t from 'tap';
import { PluginHost } from '../../../core/plugins/host.ts';
import { FilesystemStorage, filesystemStorage, storageRoutes, TEMP_PREFIX } from '../../../plugins/storage/filesystem/index.ts';
import { HOSTILE_KEYS, runStorageContract } from '../../fixtures/storage-contract.ts';

const SECRET = 'x'.repeat(40);

async function tempDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-fs-storage-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Every path under `dir`, relative. */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return entries.map(String).sort();
}

await runStorageContract(
  t,
  async (t) => {
    const dir = await tempDir(t);
    const root = join(dir, 'root');
    // Serve the URLs from a real listener: routes need a storage, the storage needs the port.
    const serving = new FilesystemStorage({ root });
    await serving.init();
    const app = fastify({ forceCloseConnections: true });
    await app.register(storageRoutes, { storage: serving, secret: SECRET });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    t.teardown(() => app.close());
    return new FilesystemStorage({ root, presign: { publicBaseUrl: address, secret: SECRET, prefix: '/storage' } });
  },
  { presignedUrlsWork: true },
);

t.test('hostile keys never touch anything outside the root', async (t) => {
  const dir = await tempDir(t);
  const root = join(dir, 'root');
  await mkdir(join(dir, 'outside'));
  await writeFile(join(dir, 'outside', 'secret'), 'do not touch');
  const storage = new FilesystemStorage({ root });
  await storage.init();
  for (const key of [...HOSTILE_KEYS, '../outside/secret', 'a/../../outside/secret', '..\\outside\\secret']) {
    await t.rejects(storage.put(key as string, Buffer.from('pwned')), { code: 'SVC_ERR_STORAGE_KEY_INVALID' });
    await t.rejects(storage.delete(key as string), { code: 'SVC_ERR_STORAGE_KEY_INVALID' });
  }
  t.same(await tree(dir), ['outside', 'outside/secret', 'root']);
  t.same(await tree(root), []);
});

t.test('temp-file names are reserved and never listed', async (t) => {
  const storage = new FilesystemStorage({ root: await tempDir(t) });
  await storage.init();
  await t.rejects(storage.put(`a/${TEMP_PREFIX}x`, Buffer.from('x')), { code: 'SVC_ERR_STORAGE_KEY_INVALID', message: /reserved/ });
  await writeFile(join(storage.root, `${TEMP_PREFIX}leftover`), 'partial');
  await storage.put('real', Buffer.from('x'));
  t.same((await storage.list('')).objects.map((o) => o.key), ['real']);
});

t.test('a broken stream leaves no temp file behind', async (t) => {
  const storage = new FilesystemStorage({ root: await tempDir(t) });
  await storage.init();
  let sent = 0;
  const body = new Readable({
    read() {
      if (sent++ < 5) this.push(Buffer.alloc(100_000, 2));
      else this.destroy(new Error('boom'));
    },
  });
  await t.rejects(storage.put('deep/dir/obj', body), { message: 'boom' });
  t.same(await tree(storage.root), ['deep', 'deep/dir'], 'only the folders, no partial file');
  await t.rejects(storage.put('limited', Buffer.alloc(11), { maxBytes: 10 }), { code: 'SVC_ERR_STORAGE_TOO_LARGE' });
  await t.rejects(storage.put('limited', Readable.from([Buffer.alloc(6), Buffer.alloc(6)]), { maxBytes: 10 }), { code: 'SVC_ERR_STORAGE_TOO_LARGE' });
  await t.rejects(storage.put('objects', Readable.from([{ not: 'bytes' }])), { code: 'SVC_ERR_STORAGE_BODY' });
  await t.rejects(storage.put('wrong', 'a string' as never), { code: 'SVC_ERR_STORAGE_BODY' });
  t.same(await tree(storage.root), ['deep', 'deep/dir']);
});

t.test('an object and a folder of the same name clash with a clear error', async (t) => {
  const storage = new FilesystemStorage({ root: await tempDir(t) });
  await storage.init();
  await storage.put('a/b', Buffer.from('file'));
  await t.rejects(storage.put('a/b/c', Buffer.from('x')), { code: 'SVC_ERR_STORAGE_KEY_CONFLICT', kind: 'conflict' });
  await storage.put('x/y/z', Buffer.from('deep'));
  await t.rejects(storage.put('x/y', Buffer.from('x')), { code: 'SVC_ERR_STORAGE_KEY_CONFLICT' });
  await t.rejects(storage.copy('a/b', 'x/y'), { code: 'SVC_ERR_STORAGE_KEY_CONFLICT' });
  await t.rejects(storage.copy('a/b', 'a/b/c'), { code: 'SVC_ERR_STORAGE_KEY_CONFLICT' });
  await storage.delete('x/y');
  t.same((await storage.list('')).objects.map((o) => o.key), ['a/b', 'x/y/z'], 'nothing changed');
  t.same(await tree(storage.root), ['a', 'a/b', 'x', 'x/y', 'x/y/z'], 'no temp files left');
});

t.test('a symlink placed in the root is not followed on read', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'secret'), 'outside');
  const storage = new FilesystemStorage({ root: join(dir, 'root') });
  await storage.init();
  await symlink(join(dir, 'secret'), join(storage.root, 'link'));
  await t.rejects(storage.get('link'), { code: 'SVC_ERR_STORAGE_NOT_FOUND' });
  t.same((await storage.list('')).objects, [], 'symlinks are not listed');
});

t.test('presign needs pre-signing options', async (t) => {
  const storage = new FilesystemStorage({ root: await tempDir(t) });
  await t.rejects(storage.presign({ method: 'GET', key: 'k' }), { code: 'SVC_ERR_STORAGE_PRESIGN_UNCONFIGURED' });
});

t.test('init refuses a root that is a file', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'file'), 'x');
  await t.rejects(new FilesystemStorage({ root: join(dir, 'file') }).init());
});

t.test('the plugin signs in through the host with defaults and serves its routes', async (t) => {
  const dir = await tempDir(t);
  const host = new PluginHost({
    config: { 'storage:filesystem': { root: join(dir, 'blobs'), publicBaseUrl: 'http://127.0.0.1:1/base/', urlSecret: SECRET } },
    selection: { storage: 'filesystem' },
  });
  await host.signIn(filesystemStorage);
  const storage = host.select('storage');
  await storage.put('k', Buffer.from('v'));
  t.same(await tree(dir), ['blobs', 'blobs/k'], 'root created from config');
  const url = new URL(await storage.presign({ method: 'GET', key: 'dir/my key' }));
  t.equal(url.origin, 'http://127.0.0.1:1');
  t.equal(url.pathname, '/base/storage/dir/my%20key');
  const expires = Number(url.searchParams.get('expires'));
  const skew = expires - Math.floor(Date.now() / 1000);
  t.ok(skew >= 899 && skew <= 900, `default expiry is 15 minutes (${skew})`);
  t.type(storage.httpRoutes, 'function');

  const app = fastify({ forceCloseConnections: true });
  await app.register(storage.httpRoutes!);
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const put = new URL(await storage.presign({ method: 'PUT', key: 'dir/my key' }));
  const response = await fetch(`${address}${put.pathname.replace('/base', '')}${put.search}`, { method: 'PUT', body: 'through host' });
  t.equal(response.status, 200);
  t.equal((await storage.head('dir/my key'))?.size, 12);
  await host.close();
});

t.test('sign-in refuses bad filesystem config, naming the field', async (t) => {
  for (const [config, reason] of [
    [{}, /root: is required; publicBaseUrl: is required; urlSecret: is required/],
    [{ root: '/tmp/x', publicBaseUrl: 'ftp://host', urlSecret: SECRET }, /publicBaseUrl: /],
    [{ root: '/tmp/x', publicBaseUrl: 'http://h', urlSecret: 'short' }, /urlSecret: /],
    [{ root: '/tmp/x', publicBaseUrl: 'http://h', urlSecret: SECRET, routePrefix: 'storage' }, /routePrefix: /],
    [{ root: '/tmp/x', publicBaseUrl: 'http://h', urlSecret: SECRET, bucket: 'b' }, /bucket: unknown field/],
  ] as const) {
    const host = new PluginHost({ config: { 'storage:filesystem': config } });
    await t.rejects(host.signIn(filesystemStorage), { code: 'SVC_ERR_PLUGIN_SIGN_IN', phase: 'config', message: reason });
    t.ok((await host.signIn(filesystemStorage).catch((e: Error) => e)) instanceof Error);
  }
});
