// The filesystem storage's writer thread (plugins/storage/filesystem/writer-thread.ts): small
// in-memory puts are written, fsynced and renamed by one thread with synchronous calls, and the
// puts that reach it together share one fsync per directory. Real files, a real worker thread and
// real child processes: what a put reports matches the file on disk, failures leave no temp file
// and say where they stopped, an idle thread does not keep a process alive, and a put in flight
// does.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { FilesystemStorage, THREAD_WRITE_MAX_BYTES } from '../../../../plugins/storage/filesystem/storage.ts';
import { writeInThread } from '../../../../plugins/storage/filesystem/writer-thread.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';

const root = await mkdtemp(join(tmpdir(), 'svc-writer-thread-'));
t.teardown(() => rm(root, { recursive: true, force: true }));

t.test('a write lands whole, with the file stat the caller is told, and its directory synced', async (t) => {
  const dir = join(root, 'one');
  const bytes = Buffer.from('{"hello":"thread"}');
  const result = await writeInThread({ dir, temp: join(dir, '.svc-tmp-a'), target: join(dir, 'a.json'), bytes });
  if (!result.ok) throw new Error(result.message);
  t.same(await readFile(join(dir, 'a.json')), bytes, 'the content (its directory was created for it)');
  const st = await stat(join(dir, 'a.json'), { bigint: true });
  t.equal(result.ino, st.ino, 'inode');
  t.equal(result.size, st.size, 'size');
  t.equal(result.mtimeNs, st.mtimeNs, 'mtime');
  t.ok(result.dirSynced, 'a write on its own syncs its directory');
  t.same(await readdir(dir), ['a.json'], 'no temp file left');
  // A view into a larger buffer: exactly its bytes, and the caller's buffer is left usable.
  const big = Buffer.alloc(1024 * 1024, 0x61);
  const view = big.subarray(1000, 1010);
  const sliced = await writeInThread({ dir, temp: join(dir, '.svc-tmp-b'), target: join(dir, 'b.txt'), bytes: view });
  t.ok(sliced.ok);
  t.equal(await readFile(join(dir, 'b.txt'), 'utf8'), 'a'.repeat(10), 'only the view\'s bytes');
  t.equal(view.length, 10, 'the caller\'s view is intact (not transferred away)');
  t.equal(big.length, 1024 * 1024);
});

t.test('writes that reach the thread together share one fsync per directory', async (t) => {
  const dirs = [join(root, 'many-a'), join(root, 'many-b')];
  for (const dir of dirs) await mkdir(dir, { recursive: true });
  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) => {
      const dir = dirs[i % 2]!;
      return writeInThread({ dir, temp: join(dir, `.svc-tmp-${i}`), target: join(dir, `${i}.txt`), bytes: Buffer.from(`object ${i}`) });
    }),
  );
  t.ok(results.every((r) => r.ok), 'all 40 written');
  const syncs = results.filter((r) => r.ok && r.dirSynced).length;
  t.ok(syncs >= 2 && syncs < 40, `40 writes into 2 directories: ${syncs} directory fsyncs`);
  for (const dir of dirs) t.equal((await readdir(dir)).length, 20, `${dir}: 20 objects, no temp files`);
});

t.test('failures say where they stopped and leave no temp file', async (t) => {
  const dir = join(root, 'fail');
  await mkdir(join(dir, 'taken', 'inner'), { recursive: true });
  const renamed = await writeInThread({ dir, temp: join(dir, '.svc-tmp-x'), target: join(dir, 'taken'), bytes: Buffer.from('x') });
  t.match(renamed, { ok: false, stage: 'rename' }, 'a non-empty directory where the object goes: the rename fails');
  t.notOk((await readdir(dir)).some((name) => name.startsWith('.svc-tmp-')), 'its temp file was removed');
  await writeFile(join(dir, 'file'), 'a file');
  const opened = await writeInThread({ dir: join(dir, 'file'), temp: join(dir, 'file', '.svc-tmp-y'), target: join(dir, 'file', 'y'), bytes: Buffer.from('y') });
  t.match(opened, { ok: false, stage: 'open', code: 'ENOTDIR' }, 'a file where the directory should be');
});

t.test('through FilesystemStorage: the etag is head\'s, a key used as a folder is a conflict', async (t) => {
  const storage = new FilesystemStorage({ root: join(root, 'storage') });
  await storage.init();
  const put = await storage.put('event-log/org/d1.json.gz', Buffer.from('payload'));
  t.equal(put.size, 7);
  t.equal(put.etag, (await storage.head('event-log/org/d1.json.gz'))!.etag, 'the etag matches a later head');
  t.equal(storage.directorySyncs, 1, 'its directory fsync is counted');
  await t.rejects(storage.put('event-log/org/d1.json.gz/inner', Buffer.from('x')), { code: 'SVC_ERR_STORAGE_KEY_CONFLICT' });
  await t.rejects(storage.put('event-log/org', Buffer.from('x')), { code: 'SVC_ERR_STORAGE_KEY_CONFLICT' });
  await t.rejects(storage.put('event-log/too-big', Buffer.alloc(10), { maxBytes: 5 }), { code: 'SVC_ERR_STORAGE_TOO_LARGE' });
  // A body over the thread's bound takes the pool path, with the same result.
  const large = Buffer.alloc(THREAD_WRITE_MAX_BYTES + 1, 7);
  const big = await storage.put('big/object', large);
  t.equal(big.size, large.length);
  t.equal(big.etag, (await storage.head('big/object'))!.etag);
});

/** Runs a script that imports the storage; resolves with its exit code (null if killed). */
function runScript(source: string, stdout: string[] = []): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    child.stdout.on('data', (d: Buffer) => stdout.push(d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

t.test('an idle thread lets the process exit; a put in flight keeps it until written', async (t) => {
  const dir = join(root, 'process');
  const module = JSON.stringify(join(REPO_ROOT, 'plugins/storage/filesystem/storage.ts'));
  const code = await runScript(`
    const { FilesystemStorage } = await import(${module});
    const storage = new FilesystemStorage({ root: ${JSON.stringify(dir)} });
    await storage.init();
    await storage.put('first', Buffer.from('one'));
    void storage.put('second', Buffer.from('two'));
  `);
  t.equal(code, 0, 'the script ended by itself (not killed after 120 s)');
  t.equal(await readFile(join(dir, 'second'), 'utf8'), 'two', 'the put it did not await was written before the exit');
});

t.test('the thread runs at the priority of the process\'s libuv pool', { skip: process.platform !== 'linux' && 'Linux thread priorities' }, async (t) => {
  const dir = join(root, 'priority');
  const storage = JSON.stringify(join(REPO_ROOT, 'plugins/storage/filesystem/storage.ts'));
  const launch = JSON.stringify(join(REPO_ROOT, 'bin/launch.ts'));
  const out: string[] = [];
  // As the orchestrator starts: its pool lowered first, then the first put starts the thread.
  const code = await runScript(
    `
    import { readdirSync, readFileSync } from 'node:fs';
    import { getPriority } from 'node:os';
    const { lowerThreadpoolPriority } = await import(${launch});
    const { FilesystemStorage } = await import(${storage});
    const tasks = () => readdirSync('/proc/self/task');
    await lowerThreadpoolPriority();
    const before = new Set(tasks());
    const storage = new FilesystemStorage({ root: ${JSON.stringify(dir)} });
    await storage.init();
    await storage.put('object', Buffer.from('x'));
    const added = tasks().filter((tid) => !before.has(tid)).map((tid) => ({ comm: readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim(), nice: getPriority(Number(tid)) }));
    console.log(JSON.stringify(added));
  `,
    out,
  );
  t.equal(code, 0);
  const added = JSON.parse(out.join('')) as Array<{ comm: string; nice: number }>;
  t.ok(added.some((thread) => thread.nice === 10), `a thread started by the put runs at the pool's nice 10: ${JSON.stringify(added)}`);
});
