// Directory fsyncs shared by concurrent puts (plugins/storage/filesystem/group-sync.ts): a caller
// is answered only after a sync that started after it asked, while the callers that ask during a
// running sync share the next one. Then the same through real puts: many objects written into one
// directory at once are all readable and the directory's fsyncs number fewer than the puts.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { FilesystemStorage } from '../../../../plugins/storage/filesystem/index.ts';
import { GroupSync } from '../../../../plugins/storage/filesystem/group-sync.ts';

/** A sync the test finishes by hand, recording when each one started. */
function manualSync() {
  const started: number[] = [];
  const finishers: Array<() => void> = [];
  let clock = 0;
  const group = new GroupSync(
    () =>
      new Promise<void>((resolve) => {
        started.push((clock += 1));
        finishers.push(resolve);
      }),
  );
  return { group, started, finish: () => finishers.shift()!() };
}

t.test('an idle group starts a sync at once; callers during it share exactly one more', async (t) => {
  const { group, started, finish } = manualSync();
  t.ok(group.idle);
  const order: string[] = [];
  const first = group.request().then(() => order.push('first'));
  t.equal(started.length, 1, 'the first caller starts a sync');
  const second = group.request().then(() => order.push('second'));
  const third = group.request().then(() => order.push('third'));
  t.equal(started.length, 1, 'callers during a running sync do not start another yet');
  finish();
  await first;
  t.same(order, ['first'], 'the first is answered by its own sync; the others wait for one that started after them');
  await new Promise((r) => setImmediate(r));
  t.equal(started.length, 2, 'one sync covers both later callers');
  const fourth = group.request().then(() => order.push('fourth'));
  finish();
  await Promise.all([second, third]);
  t.same(order, ['first', 'second', 'third']);
  await new Promise((r) => setImmediate(r));
  t.equal(started.length, 3, 'a caller during the second sync gets a third');
  finish();
  await fourth;
  t.ok(group.idle, 'idle again when nothing runs or waits');
});

t.test('concurrent puts into one directory share its fsyncs and all land', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'svc-fs-group-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const storage = new FilesystemStorage({ root });
  await storage.init();
  const puts = Array.from({ length: 40 }, (_, i) => storage.put(`event-log/acme/d${i}.json.gz`, Buffer.from(`payload ${i}`)));
  await Promise.all(puts);
  t.ok(storage.directorySyncs >= 1 && storage.directorySyncs < 40, `40 puts shared ${storage.directorySyncs} directory fsyncs`);
  for (let i = 0; i < 40; i += 1) {
    const { stream } = await storage.open(`event-log/acme/d${i}.json.gz`);
    let text = '';
    for await (const chunk of stream) text += String(chunk);
    if (text !== `payload ${i}`) t.fail(`object ${i} reads ${text}`);
  }
  const left = (await readdir(join(root, 'event-log', 'acme'))).filter((n) => n.startsWith('.svc-tmp-'));
  t.same(left, [], 'no temp files left');
  const before = storage.directorySyncs;
  await storage.put('event-log/acme/alone.json.gz', Buffer.from('x'));
  t.equal(storage.directorySyncs, before + 1, 'a put on its own still syncs its directory');
});
