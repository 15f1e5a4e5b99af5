import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { computeTreeDigest } from '../../../workflow/hash/tree-digest.ts';
import {
  createSvcignoreMatcher,
  DEFAULT_SVCIGNORE,
  DEFAULT_SVCIGNORE_PATTERNS,
  loadSvcignore,
} from '../../../workflow/hash/svcignore.ts';
import { tempDir, treeFrom } from '../../fixtures/trees/build-tree.ts';

t.test('the default list is exactly the spec list', async (t) => {
  t.same([...DEFAULT_SVCIGNORE_PATTERNS], ['node_modules/', 'types/', '.npmrc', 'package-lock.json', 'pnpm-lock.yaml', 'svc.lock.json']);
  t.ok(Object.isFrozen(DEFAULT_SVCIGNORE_PATTERNS));
  const lines = DEFAULT_SVCIGNORE.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  t.same(lines, [...DEFAULT_SVCIGNORE_PATTERNS], 'what svc init writes lists the same patterns');
});

t.test('the text svc init writes behaves exactly like the built-in defaults', async (t) => {
  const builtIn = createSvcignoreMatcher(undefined);
  const written = createSvcignoreMatcher(DEFAULT_SVCIGNORE);
  t.equal(builtIn.source, 'default');
  t.equal(written.source, 'file');
  const probes = [
    'node_modules/', 'node_modules/x.js', 'a/node_modules/', 'a/node_modules/b.js', 'types/', 'types/x.d.ts', 'types',
    '.npmrc', 'a/.npmrc', 'package-lock.json', 'a/package-lock.json', 'pnpm-lock.yaml', 'svc.lock.json', 'a/svc.lock.json',
    'workflows/ci.ts', 'package.json', '.svcignore', 'types.ts',
  ];
  for (const p of probes) t.equal(written.ignores(p), builtIn.ignores(p), p);
  t.notOk(builtIn.ignores('types'), 'a file named types is not a directory');
  t.ok(builtIn.ignores('types/'));
  t.same(written.warnings, []);
});

t.test('a .svcignore replaces the defaults entirely', async (t) => {
  const m = createSvcignoreMatcher('dist/\n');
  t.ok(m.ignores('dist/'));
  t.ok(m.ignores('dist/a.js'));
  t.notOk(m.ignores('node_modules/'), 'node_modules is no longer excluded');
  t.notOk(m.ignores('.npmrc'));
  t.notOk(m.ignores('package-lock.json'));
});

t.test('svc.lock.json is excluded whatever the file says', async (t) => {
  for (const text of ['', '# nothing\n', '!svc.lock.json\n', '*\n!svc.lock.json\n', '!*\n']) {
    const m = createSvcignoreMatcher(text);
    t.ok(m.ignores('svc.lock.json'), JSON.stringify(text));
    t.ok(m.ignores('sub/svc.lock.json'), `${JSON.stringify(text)} at depth`);
  }
});

t.test('.svcignore itself stays covered even when it lists itself', async (t) => {
  for (const text of ['.svcignore\n', '.*\n', '*\n']) {
    const m = createSvcignoreMatcher(text);
    t.notOk(m.ignores('.svcignore'), JSON.stringify(text));
    t.equal(m.warnings.length, 1);
    t.equal(m.warnings[0]!.code, 'svcignore-self');
  }
  t.same(createSvcignoreMatcher('dist/\n').warnings, []);
  t.notOk(createSvcignoreMatcher(undefined).ignores('.svcignore'));
  t.ok(createSvcignoreMatcher('.svcignore\n').ignores('sub/.svcignore'), 'only the top-level file is special');
});

t.test('gitignore semantics: trailing slash, bare names at depth, anchored patterns, negation', async (t) => {
  const m = createSvcignoreMatcher(['build/', 'secret.txt', 'docs/draft.md', '/top.txt', '*.log', '!keep.log', '# comment', '  ', ''].join('\r\n'));
  t.ok(m.ignores('build/'));
  t.ok(m.ignores('a/build/'), 'a directory pattern without inner slash matches at depth');
  t.ok(m.ignores('build/x.ts'));
  t.notOk(m.ignores('build'), 'a trailing slash does not match a file');
  t.ok(m.ignores('secret.txt'));
  t.ok(m.ignores('a/b/secret.txt'), 'bare name at any depth');
  t.ok(m.ignores('docs/draft.md'));
  t.notOk(m.ignores('x/docs/draft.md'), 'a pattern with a slash is anchored');
  t.ok(m.ignores('top.txt'));
  t.notOk(m.ignores('a/top.txt'), 'a leading slash anchors');
  t.ok(m.ignores('a/x.log'));
  t.notOk(m.ignores('a/keep.log'), 'negation re-includes');
  t.notOk(m.ignores('# comment'));
  const bom = createSvcignoreMatcher('\uFEFFfirst.txt\n');
  t.ok(bom.ignores('first.txt'), 'a UTF-8 BOM does not swallow the first pattern');
});

t.test('loadSvcignore reads the file or falls back to the defaults', async (t) => {
  const none = await tempDir(t);
  t.equal((await loadSvcignore(none)).source, 'default');
  const withFile = await treeFrom(t, { '.svcignore': 'dist/\n' });
  const m = await loadSvcignore(withFile);
  t.equal(m.source, 'file');
  t.ok(m.ignores('dist/'));
  const dirInstead = await tempDir(t);
  await mkdir(path.join(dirInstead, '.svcignore'));
  await t.rejects(loadSvcignore(dirInstead), { code: 'SVC_ERR_COMPILE_READ_FAILED' }, 'a directory named .svcignore is refused');
  if (process.getuid?.() !== 0) {
    const unreadable = await tempDir(t);
    await writeFile(path.join(unreadable, '.svcignore'), 'x\n');
    await chmod(path.join(unreadable, '.svcignore'), 0o000);
    await t.rejects(loadSvcignore(unreadable), { code: 'SVC_ERR_COMPILE_READ_FAILED' });
  }
});

t.test('tree walk applies .svcignore: variants end to end', async (t) => {
  const base = {
    '.svc/workflows/ci.ts': 'ci\n',
    '.svc/node_modules/x/index.js': 'x\n',
    '.svc/types/a.d.ts': 'a\n',
    '.svc/.npmrc': 'r\n',
    '.svc/svc.lock.json': '{}\n',
    '.svc/dist/out.js': 'o\n',
    '.svc/a/b/secret.txt': 's\n',
    '.svc/docs/draft.md': 'd\n',
    '.svc/x/docs/draft.md': 'd\n',
    '.svc/real-vendor/v.ts': 'v\n',
    '.svc/vendor': { symlink: 'real-vendor' },
    '.svc/real-vendor-file.ts': 'f\n',
    '.svc/lib/vendor': { symlink: '../real-vendor-file.ts' },
  };
  const noFile = await treeFrom(t, base);
  const paths = async (root: string): Promise<string[]> => (await computeTreeDigest(path.join(root, '.svc'))).files.map((f) => f.path);
  t.same(await paths(noFile), [
    'a/b/secret.txt', 'dist/out.js', 'docs/draft.md', 'lib/vendor', 'real-vendor-file.ts', 'real-vendor/v.ts', 'vendor/v.ts', 'workflows/ci.ts', 'x/docs/draft.md',
  ], 'absent .svcignore: defaults');

  const custom = await treeFrom(t, { ...base, '.svc/.svcignore': 'dist/\nsecret.txt\ndocs/draft.md\nvendor/\n' });
  t.same(await paths(custom), [
    '.npmrc', '.svcignore', 'lib/vendor', 'node_modules/x/index.js', 'real-vendor-file.ts', 'real-vendor/v.ts', 'types/a.d.ts', 'workflows/ci.ts', 'x/docs/draft.md',
  ], 'present .svcignore replaces the defaults; a symlink to a directory is excluded by dir/, a symlink to a file is not; the lock stays out');
});
