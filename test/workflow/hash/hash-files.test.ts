import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { parseHashFilesPattern, RepoFileIndex, resolveHashFiles } from '../../../workflow/hash/hash-files.ts';
import { buildTree, tempDir, treeFrom } from '../../fixtures/trees/build-tree.ts';
import { DOCUMENTED_DIGESTS, DOCUMENTED_EXAMPLE } from '../../fixtures/trees/corpus.ts';

const resolve = (root: string, patterns: string[]) => resolveHashFiles(new RepoFileIndex(root), patterns);

t.test('the documented example asset digest', async (t) => {
  const root = await treeFrom(t, DOCUMENTED_EXAMPLE);
  const result = await resolve(root, ['assets/*']);
  t.same(result.files, ['assets/logo.txt']);
  t.equal(result.assetDigest, 'f4d67f13f8a01cf4fcd3fc6dd8ae15e1efdd90a0107669b58467f62d3fb94e53');
  t.equal(result.assetDigest, DOCUMENTED_DIGESTS.assetDigest);
  t.same(result.warnings, []);
});

t.test('patterns resolve relative to the repo root, sorted, deduplicated, with dotfiles', async (t) => {
  const root = await treeFrom(t, {
    'config/b.json': '{}\n',
    'config/a.json': '{}\n',
    'config/.hidden.json': '{}\n',
    'config/deep/c.json': '{}\n',
    'config/readme.md': 'r\n',
    'Dockerfile': 'FROM scratch\n',
    '.git/config': 'never\n',
    'sub/.git': 'gitdir: elsewhere\n',
    '.svc/workflows/ci.ts': 'ci\n',
  });
  const result = await resolve(root, ['config/**/*.json', './Dockerfile', 'config/*.json', '!config/deep/**', '.svc/**']);
  t.same(result.files, ['.svc/workflows/ci.ts', 'Dockerfile', 'config/.hidden.json', 'config/a.json', 'config/b.json']);
  const all = await resolve(root, ['**']);
  t.notOk(all.files.some((f) => f.startsWith('.git/') || f.endsWith('/.git') || f === '.git'), '.git is never listed');
  const crlf = await treeFrom(t, { 'config/a.json': '{}\r\n' });
  const lf = await treeFrom(t, { 'config/a.json': '{}\n' });
  t.equal((await resolve(crlf, ['config/*'])).assetDigest, (await resolve(lf, ['config/*'])).assetDigest, 'CRLF normalized like the tree');
  const changed = await treeFrom(t, { 'config/a.json': '{ }\n' });
  t.not((await resolve(changed, ['config/*'])).assetDigest, (await resolve(lf, ['config/*'])).assetDigest);
});

t.test('a pattern matching nothing warns and hashes an empty set', async (t) => {
  const root = await treeFrom(t, { 'a.txt': 'a\n', 'dir/x.txt': 'x\n' });
  const none = await resolve(root, ['missing/**', 'dir']);
  t.same(none.files, []);
  t.equal(none.assetDigest, DOCUMENTED_DIGESTS.emptyDigest);
  t.same(none.warnings.map((w) => [w.code, w.path]), [['hashfiles-no-match', 'missing/**'], ['hashfiles-no-match', 'dir']], 'a bare directory name matches no file (use dir/**)');
  const some = await resolve(root, ['a.txt', 'nothing-*.md']);
  t.same(some.files, ['a.txt']);
  t.equal(some.warnings.length, 1);
});

t.test('symlinks: followed inside the repo, refused outside, dirs not entered', async (t) => {
  const top = await tempDir(t);
  const root = path.join(top, 'repo');
  await buildTree(top, { 'secret.txt': 'outside\n', 'outdir/o.txt': 'o\n' });
  await buildTree(root, {
    'real/a.txt': 'a\n',
    'links/a.txt': { symlink: '../real/a.txt' },
    'links/dir': { symlink: '../real' },
    'out/secret.txt': { symlink: '../../secret.txt' },
    'out/dangling.txt': { symlink: 'nowhere' },
    'escape': { symlink: '../outdir' },
  });
  const inside = await resolve(root, ['links/*.txt']);
  t.same(inside.files, ['links/a.txt']);
  t.same((await resolve(root, ['links/**/*.txt'])).files, ['links/a.txt'], 'the symlinked directory is not entered');
  await t.rejects(resolve(root, ['links/dir']), { code: 'SVC_ERR_COMPILE_UNSUPPORTED_FILE' });
  await t.rejects(resolve(root, ['out/secret.txt']), { code: 'SVC_ERR_COMPILE_HASHFILES_OUTSIDE_REPO', message: /out\/secret\.txt/ });
  await t.rejects(resolve(root, ['out/*']), { code: 'SVC_ERR_COMPILE_SYMLINK_DANGLING' }, 'the first problem in path order');
  await t.rejects(resolve(root, ['out/*', '!out/dangling.txt']), { code: 'SVC_ERR_COMPILE_HASHFILES_OUTSIDE_REPO' });
  await t.rejects(resolve(root, ['out/dangling.txt']), { code: 'SVC_ERR_COMPILE_SYMLINK_DANGLING' });
  t.same((await resolve(root, ['out/*', '!out/secret.txt', '!out/dangling.txt'])).files, [], 'excluded problem links are fine');
  await t.rejects(resolve(root, ['escape/*.txt']), { code: 'SVC_ERR_COMPILE_HASHFILES_OUTSIDE_REPO' }, 'a base through a link out of the repo');
});

t.test('bad patterns are refused before anything is read', async (t) => {
  const bad: unknown[] = ['', '   ', '/etc/passwd', '../x', 'a/../../x', 'C:/x', 'a\\b', '.git/config', 'x/.git/**', 'a\0b', '!', 42, null];
  for (const pattern of bad) t.throws(() => parseHashFilesPattern(pattern), { code: 'SVC_ERR_COMPILE_HASHFILES_PATTERN' }, JSON.stringify(pattern));
  t.same(parseHashFilesPattern('./a/*.txt'), { pattern: 'a/*.txt', negated: false, base: 'a' });
  t.same(parseHashFilesPattern('!a/b.txt'), { pattern: 'a/b.txt', negated: true, base: 'a/b.txt' });
  const root = await treeFrom(t, { 'a.txt': 'a\n' });
  await t.rejects(resolve(root, ['a.txt', '../x']), { code: 'SVC_ERR_COMPILE_HASHFILES_PATTERN' });
});

t.test('the index memoizes listings and digests across workflows', async (t) => {
  const root = await treeFrom(t, { 'a/1.txt': '1\n', 'a/2.txt': '2\n' });
  const index = new RepoFileIndex(root);
  const first = await resolveHashFiles(index, ['a/*']);
  await writeFile(path.join(root, 'a/3.txt'), '3\n');
  const second = await resolveHashFiles(index, ['a/*']);
  t.same(second, first, 'one compile sees one snapshot of the listing');
  t.same((await resolveHashFiles(new RepoFileIndex(root), ['a/*'])).files, ['a/1.txt', 'a/2.txt', 'a/3.txt']);
});
