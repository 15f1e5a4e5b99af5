import { execFileSync } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { computeTreeDigest } from '../../../workflow/hash/tree-digest.ts';
import { buildTree, tempDir, treeFrom, type TreeSpec } from '../../fixtures/trees/build-tree.ts';
import { CORPUS, CORPUS_COVERED, CORPUS_IGNORED, DOCUMENTED_DIGESTS, DOCUMENTED_EXAMPLE } from '../../fixtures/trees/corpus.ts';

const svc = (root: string): string => path.join(root, '.svc');

t.test('the documented example yields the documented digests', async (t) => {
  const root = await treeFrom(t, DOCUMENTED_EXAMPLE);
  const result = await computeTreeDigest(svc(root));
  t.equal(result.treeDigest, '478f0e54cf969cd6f6f052b2074ed4da161a55cbab627162f240034dc4246384');
  t.equal(result.treeDigest, DOCUMENTED_DIGESTS.treeDigest);
  t.same(result.files.map((f) => [f.path, f.sha256]), [
    ['README.md', DOCUMENTED_DIGESTS.readmeSha256],
    ['workflows/ci.ts', DOCUMENTED_DIGESTS.ciSha256],
  ]);
  t.equal(result.svcignore, 'default');
});

t.test('an empty .svc/ digests to SHA-256 of nothing', async (t) => {
  const root = await treeFrom(t, { '.svc': { dir: true }, '.svc/empty-dir': { dir: true } });
  t.equal((await computeTreeDigest(svc(root))).treeDigest, DOCUMENTED_DIGESTS.emptyDigest);
});

t.test('CRLF and LF text hash the same; binary bytes are not normalized', async (t) => {
  const lf = await treeFrom(t, { '.svc/a.ts': 'a\nb\n', '.svc/b.bin': Buffer.from([0, 0x0d, 0x0a]) });
  const crlf = await treeFrom(t, { '.svc/a.ts': 'a\r\nb\r\n', '.svc/b.bin': Buffer.from([0, 0x0d, 0x0a]) });
  const binLf = await treeFrom(t, { '.svc/a.ts': 'a\nb\n', '.svc/b.bin': Buffer.from([0, 0x0a]) });
  const [rLf, rCrlf, rBin] = await Promise.all([lf, crlf, binLf].map((r) => computeTreeDigest(svc(r))));
  t.equal(rLf!.treeDigest, rCrlf!.treeDigest);
  t.not(rLf!.treeDigest, rBin!.treeDigest, 'CRLF inside a binary file is content');
  t.same(rLf!.files.map((f) => f.binary), [false, true]);
  t.same(rCrlf!.files.map((f) => f.bytes), [6, 3], 'bytes is the size on disk');
});

t.test('symlinks inside .svc/ are hashed as their targets', async (t) => {
  const root = await treeFrom(t, {
    '.svc/workflows/ci.ts': 'ci\n',
    '.svc/lib/util.ts': 'u\n',
    '.svc/alias.ts': { symlink: 'workflows/ci.ts' },
    '.svc/libs': { symlink: 'lib' },
    'shared/s.ts': 's\n',
    '.svc/shared': { symlink: '../shared' },
  });
  const result = await computeTreeDigest(svc(root));
  const byPath = new Map(result.files.map((f) => [f.path, f]));
  t.same([...byPath.keys()], ['alias.ts', 'lib/util.ts', 'libs/util.ts', 'shared/s.ts', 'workflows/ci.ts']);
  t.equal(byPath.get('alias.ts')!.sha256, byPath.get('workflows/ci.ts')!.sha256);
  t.equal(byPath.get('libs/util.ts')!.sha256, byPath.get('lib/util.ts')!.sha256);
  t.equal(byPath.get('alias.ts')!.viaSymlink, true);
  t.equal(byPath.get('libs/util.ts')!.viaSymlink, true);
  t.equal(byPath.get('lib/util.ts')!.viaSymlink, undefined);
  t.same(result.symlinks, ['alias.ts', 'libs', 'shared']);
  t.same(result.warnings, [], 'links inside the parent of .svc/ with relative targets are quiet');

  // A link and a copy of its target hash the same: the link is its target's content.
  const copy = await treeFrom(t, {
    '.svc/workflows/ci.ts': 'ci\n',
    '.svc/lib/util.ts': 'u\n',
    '.svc/alias.ts': 'ci\n',
    '.svc/libs/util.ts': 'u\n',
    '.svc/shared/s.ts': 's\n',
  });
  t.equal((await computeTreeDigest(svc(copy))).treeDigest, result.treeDigest);

  await writeFile(path.join(root, 'shared/s.ts'), 's2\n');
  t.not((await computeTreeDigest(svc(root))).treeDigest, result.treeDigest, 'a change behind a link changes the digest');
});

t.test('links escaping the parent of .svc/ or with absolute targets warn', async (t) => {
  const top = await tempDir(t);
  const root = path.join(top, 'repo');
  await buildTree(top, { 'outside/o.ts': 'o\n', 'outside/dir/d.ts': 'd\n', 'repo/inside.ts': 'i\n' });
  await buildTree(root, {
    '.svc/up.ts': { symlink: '../../outside/o.ts' },
    '.svc/updir': { symlink: '../../outside/dir' },
    '.svc/abs-inside.ts': { symlink: path.join(root, 'inside.ts') },
    '.svc/abs-outside.ts': { symlink: path.join(top, 'outside/o.ts') },
  });
  const result = await computeTreeDigest(svc(root));
  t.same(result.files.map((f) => f.path), ['abs-inside.ts', 'abs-outside.ts', 'up.ts', 'updir/d.ts'], 'still hashed');
  const warnings = result.warnings.map((w) => [w.code, w.path]).sort();
  t.same(warnings, [
    ['symlink-absolute-target', 'abs-inside.ts'],
    ['symlink-absolute-target', 'abs-outside.ts'],
    ['symlink-outside-parent', 'abs-outside.ts'],
    ['symlink-outside-parent', 'up.ts'],
    ['symlink-outside-parent', 'updir'],
  ]);
  for (const w of result.warnings) t.match(w.message, `.svc/${w.path}`, 'the message names the link');
});

t.test('dangling links are errors naming the path, unless excluded', async (t) => {
  const root = await treeFrom(t, { '.svc/ok.ts': 'x\n', '.svc/lib/gone.ts': { symlink: 'nowhere.ts' } });
  await t.rejects(computeTreeDigest(svc(root)), { code: 'SVC_ERR_COMPILE_SYMLINK_DANGLING', message: /\.svc\/lib\/gone\.ts -> nowhere\.ts/ });
  const excluded = await treeFrom(t, { '.svc/.svcignore': 'gone.ts\n', '.svc/lib/gone.ts': { symlink: 'nowhere.ts' }, '.svc/ok.ts': 'x\n' });
  t.same((await computeTreeDigest(svc(excluded))).files.map((f) => f.path), ['.svcignore', 'ok.ts']);
  const excludedDir = await treeFrom(t, { '.svc/.svcignore': 'gone/\n', '.svc/gone': { symlink: 'nowhere' } });
  t.same((await computeTreeDigest(svc(excludedDir))).files.map((f) => f.path), ['.svcignore'], 'a dangling link matched by a dir/ pattern is skipped too');
});

t.test('symlink loops are errors', async (t) => {
  const pair = await treeFrom(t, { '.svc/a': { symlink: 'b' }, '.svc/b': { symlink: 'a' } });
  await t.rejects(computeTreeDigest(svc(pair)), { code: 'SVC_ERR_COMPILE_SYMLINK_LOOP', message: /\.svc\/a -> b/ });
  const up = await treeFrom(t, { '.svc/sub/x.ts': 'x\n', '.svc/sub/up': { symlink: '..' } });
  await t.rejects(computeTreeDigest(svc(up)), { code: 'SVC_ERR_COMPILE_SYMLINK_LOOP', message: /\.svc\/sub\/up/ });
  const self = await treeFrom(t, { '.svc/sub/me': { symlink: '.' } });
  await t.rejects(computeTreeDigest(svc(self)), { code: 'SVC_ERR_COMPILE_SYMLINK_LOOP' });
  const viaLink = await treeFrom(t, { '.svc/real/x.ts': 'x\n', '.svc/real/back': { symlink: '../link' }, '.svc/link': { symlink: 'real' } });
  await t.rejects(computeTreeDigest(svc(viaLink)), { code: 'SVC_ERR_COMPILE_SYMLINK_LOOP' });
  const ignoredLoop = await treeFrom(t, { '.svc/.svcignore': 'up/\n', '.svc/sub/up': { symlink: '..' } });
  t.same((await computeTreeDigest(svc(ignoredLoop))).files.map((f) => f.path), ['.svcignore'], 'an excluded loop is never followed');
});

t.test('special files and bad locations are refused', async (t) => {
  const root = await treeFrom(t, { '.svc/ok.ts': 'x\n' });
  execFileSync('mkfifo', [path.join(root, '.svc/pipe')]);
  await t.rejects(computeTreeDigest(svc(root)), { code: 'SVC_ERR_COMPILE_UNSUPPORTED_FILE', message: /\.svc\/pipe/ });
  await writeFile(path.join(root, '.svc/.svcignore'), 'pipe\n');
  t.same((await computeTreeDigest(svc(root))).files.map((f) => f.path), ['.svcignore', 'ok.ts'], 'unless excluded');
  const empty = await tempDir(t);
  await t.rejects(computeTreeDigest(svc(empty)), { code: 'SVC_ERR_COMPILE_SVC_DIR_MISSING' });
  const fileInstead = await treeFrom(t, { '.svc': 'not a dir' });
  await t.rejects(computeTreeDigest(svc(fileInstead)), { code: 'SVC_ERR_COMPILE_SVC_DIR_MISSING', message: /not a directory/ });
});

t.test('order and repeatability', async (t) => {
  const names = ['b.ts', 'a.ts', 'B.ts', 'a-b.ts', 'a/b.ts', 'a.b/c.ts', '\u{1F600}.ts', '\uFF61.ts', 'é.ts', 'e\u0301.ts'];
  const forward: TreeSpec = {};
  const backward: TreeSpec = {};
  for (const n of names) forward[`.svc/${n}`] = `${n}\n`;
  for (const n of [...names].reverse()) backward[`.svc/${n}`] = `${n}\n`;
  const r1 = await treeFrom(t, forward);
  const r2 = await treeFrom(t, backward);
  const first = await computeTreeDigest(svc(r1));
  const again = await computeTreeDigest(svc(r1));
  const other = await computeTreeDigest(svc(r2));
  t.equal(JSON.stringify(first), JSON.stringify(again), 'two runs are byte-identical');
  t.equal(first.treeDigest, other.treeDigest, 'creation order does not matter');
  const sorted = first.files.map((f) => f.path);
  const byBytes = [...sorted].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  t.same(sorted, byBytes, 'files are in UTF-8 byte order');
  t.ok(sorted.indexOf('\uFF61.ts') < sorted.indexOf('\u{1F600}.ts'));
  t.ok(sorted.indexOf('a-b.ts') < sorted.indexOf('a.b/c.ts') && sorted.indexOf('a.b/c.ts') < sorted.indexOf('a/b.ts'), '- < . < / in bytes');
  t.not(sorted.indexOf('é.ts'), -1);
  t.not(sorted.indexOf('e\u0301.ts'), -1, 'no Unicode normalization: NFC and NFD names are distinct paths');
});

t.test('any one-byte change to a covered file changes the digest; changes to ignored files do not', async (t) => {
  const root = await treeFrom(t, CORPUS);
  const baseline = (await computeTreeDigest(svc(root))).treeDigest;
  const covered = Object.keys(CORPUS_COVERED);
  t.same(
    (await computeTreeDigest(svc(root))).files.map((f) => `.svc/${f.path}`).sort(),
    [...covered].sort(),
    'the corpus covers exactly the files it says',
  );
  let checks = 0;
  for (const rel of covered) {
    const abs = path.join(root, rel);
    const original = await readFile(abs);
    const variants: Buffer[] = [Buffer.concat([original, Buffer.from('x')])];
    for (const at of new Set([0, Math.floor(original.length / 2), original.length - 1])) {
      if (at < 0 || at >= original.length) continue;
      for (const flip of [0x01, 0x20]) {
        const changed = Buffer.from(original);
        changed[at] = changed[at]! ^ flip;
        variants.push(changed);
      }
    }
    for (const variant of variants) {
      await writeFile(abs, variant);
      t.not((await computeTreeDigest(svc(root))).treeDigest, baseline, `${rel} changed`);
      checks++;
    }
    await writeFile(abs, original);
  }
  for (const rel of Object.keys(CORPUS_IGNORED)) {
    const abs = path.join(root, rel);
    const original = await readFile(abs);
    await writeFile(abs, Buffer.concat([original, Buffer.from('changed')]));
    t.equal((await computeTreeDigest(svc(root))).treeDigest, baseline, `${rel} is ignored`);
    await rm(abs);
    t.equal((await computeTreeDigest(svc(root))).treeDigest, baseline, `${rel} removal is ignored`);
    await writeFile(abs, original);
    checks++;
  }
  await writeFile(path.join(root, 'README.md'), 'changed outside .svc/\n');
  t.equal((await computeTreeDigest(svc(root))).treeDigest, baseline, 'files outside .svc/ are not covered');
  await writeFile(path.join(root, '.svc/new.ts'), '\n');
  t.not((await computeTreeDigest(svc(root))).treeDigest, baseline, 'a new covered file changes the digest');
  await rm(path.join(root, '.svc/new.ts'));
  await rm(path.join(root, '.svc/empty.txt'));
  t.not((await computeTreeDigest(svc(root))).treeDigest, baseline, 'removing a covered (even empty) file changes the digest');
  t.ok(checks > 40);
});

t.test('renaming a covered file changes the digest even with the same content', async (t) => {
  const a = await treeFrom(t, { '.svc/a.ts': 'same\n' });
  const b = await treeFrom(t, { '.svc/b.ts': 'same\n' });
  const moved = await treeFrom(t, { '.svc/sub/a.ts': 'same\n' });
  const digests = await Promise.all([a, b, moved].map(async (r) => (await computeTreeDigest(svc(r))).treeDigest));
  t.equal(new Set(digests).size, 3);
});
