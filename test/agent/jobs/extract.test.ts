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

t.test('hard links to files stored earlier, and "./" entries, still extract', async (t) => {
  const r = await attempt([{ name: './', type: '5' }, { name: 'a.txt', body: 'same' }, { name: 'b.txt', type: '1', link: 'a.txt' }]);
  t.equal(r.error, undefined);
  t.equal(await readFile(join(tmp.dir, `out${n}`, 'b.txt'), 'utf8'), 'same');
});

t.test('a symlink whose target names one of its own ancestors extracts (node-tar 7 alone waits forever)', async (t) => {
  const r = await attempt([{ name: 'x/', type: '5' }, { name: 'x/y/', type: '5' }, { name: 'x/y/f', body: 'f' }, { name: 'x/y/link', type: '2', link: 'x' }]);
  t.equal(r.error, undefined);
  const { readlink } = await import('node:fs/promises');
  t.equal(await readlink(join(tmp.dir, `out${n}`, 'x', 'y', 'link')), 'x');
});

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
  // Found by test/fuzz/archives.test.ts: node-tar 7 never settles on these (the agent would hang).
  ['a hard link named "." before a symlink below it', [{ name: '.', type: '1', link: 'x' }, { name: 'a/c', type: '2', link: 'a' }], /only a directory may name the destination/],
  ['a hard link below a file', [{ name: 'a', body: 'x' }, { name: 'a/c', type: '1', link: 'a' }], /lies below "a", a file or link/],
  ['a hard link to a directory', [{ name: 'dir/', type: '5' }, { name: 'dir/a', type: '1', link: 'dir' }], /must name a file stored earlier/],
  ['a symlink named with a trailing slash', [{ name: 'a/a/dir//', type: '2', link: 'a' }, { name: 'link/dir', body: 'x' }], /ending in "\/" names a directory/],
  ['a symlink named "dir/a/." whose target leaves from "dir"', [{ name: 'ok.txt', body: 'x' }, { name: 'dir/a/.', type: '2', link: '../..' }], /outside the destination/],
  ['a file written through a symlinked directory', [{ name: 'ok/', type: '5' }, { name: 'ln', type: '2', link: 'ok' }, { name: 'ln/f', body: 'x' }], /lies below "ln"/],
  ['a path used as a directory and as a file', [{ name: 'a/b', body: 'x' }, { name: 'a', body: 'y' }], /two kinds of entry/],
];
for (const [what, entries, pattern] of hostile) {
  t.test(`refuses ${what} and writes nothing`, async (t) => {
    const r = await attempt(entries);
    t.equal(r.error?.code, 'SVC_ERR_AGENT_ARCHIVE_HOSTILE');
    t.match(r.error?.message, pattern);
    t.same(r.files, [], 'nothing extracted, not even the good entry');
  });
}
