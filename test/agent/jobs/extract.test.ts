// Hostile archives are refused whole, before anything is written.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { extractArchive } from '../../../agent/jobs/extract.ts';
import { tempDir } from '../fixtures/trees.ts';

// A hand-made ustar archive: node-tar refuses to write these entries, which is the point.
function header(name: string, type: string, size: number, linkname = ''): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100);
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(size.toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148);
  h.write(type, 156);
  h.write(linkname, 157, 100);
  h.write('ustar\0', 257);
  h.write('00', 263);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return h;
}
function archive(entries: Array<{ name: string; type?: string; body?: string; link?: string }>): Buffer {
  const parts: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    parts.push(header(e.name, e.type ?? '0', body.length, e.link ?? ''));
    if (body.length > 0) parts.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(parts));
}

const tmp = await tempDir('svc-extract-');
t.teardown(tmp.cleanup);
let n = 0;
async function attempt(entries: Parameters<typeof archive>[0]) {
  const file = join(tmp.dir, `a${++n}.tar.gz`);
  await writeFile(file, archive(entries));
  const dest = join(tmp.dir, `out${n}`);
  await mkdir(dest);
  const error = await extractArchive(file, dest).then(
    () => undefined,
    (e: unknown) => e as { code?: string; message: string },
  );
  return { error, files: await readdir(dest) };
}

t.test('a clean archive extracts', async (t) => {
  const r = await attempt([{ name: 'dir/', type: '5' }, { name: 'dir/a.txt', body: 'hello' }, { name: 'dir/link', type: '2', link: 'a.txt' }]);
  t.equal(r.error, undefined);
  t.equal(await readFile(join(tmp.dir, `out${n}`, 'dir', 'link'), 'utf8'), 'hello');
});

const hostile: Array<[string, Parameters<typeof archive>[0], RegExp]> = [
  ['absolute path', [{ name: 'ok.txt', body: 'x' }, { name: '/tmp/svc-evil', body: 'x' }], /absolute/],
  ['.. segment', [{ name: 'ok.txt', body: 'x' }, { name: 'a/../../evil', body: 'x' }], /"\.\."/],
  ['symlink to an absolute target', [{ name: 'ok.txt', body: 'x' }, { name: 'etc', type: '2', link: '/etc' }], /absolute/],
  ['symlink escaping through ..', [{ name: 'ok.txt', body: 'x' }, { name: 'sub/up', type: '2', link: '../../outside' }], /outside the destination/],
  ['hard link escaping', [{ name: 'ok.txt', body: 'x' }, { name: 'h', type: '1', link: '../x' }], /outside the destination/],
  ['device node', [{ name: 'ok.txt', body: 'x' }, { name: 'dev', type: '3' }], /not allowed/],
];
for (const [what, entries, pattern] of hostile) {
  t.test(`refuses ${what} and writes nothing`, async (t) => {
    const r = await attempt(entries);
    t.equal(r.error?.code, 'SVC_ERR_AGENT_ARCHIVE_HOSTILE');
    t.match(r.error?.message, pattern);
    t.same(r.files, [], 'nothing extracted, not even the good entry');
  });
}
