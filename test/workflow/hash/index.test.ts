import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { createTreeHasher, hashWorkflowTree, lockfileHash, siblingsDigest } from '../../../workflow/hash/index.ts';
import { treeFrom, type TreeSpec } from '../../fixtures/trees/build-tree.ts';
import { DOCUMENTED_DIGESTS, DOCUMENTED_EXAMPLE } from '../../fixtures/trees/corpus.ts';

t.test('hashWorkflowTree: the documented example end to end', async (t) => {
  const root = await treeFrom(t, DOCUMENTED_EXAMPLE);
  const plain = await hashWorkflowTree({ repoRoot: root });
  t.equal(plain.treeDigest, DOCUMENTED_DIGESTS.treeDigest);
  t.equal(plain.contentHash, 'f3860654b4a1cc203d9ab2c63ed50f1d780710fca563f827246b6b3f1b4ca090');
  t.equal(plain.compileSchemaVersion, 7);
  t.equal(plain.resolvedHashFiles, undefined);
  t.equal(plain.assetDigest, undefined);
  t.same(plain.files.map((f) => f.path), ['README.md', 'workflows/ci.ts']);
  t.same(plain.warnings, []);
  t.same(plain.symlinks, []);

  const withAssets = await hashWorkflowTree({ repoRoot: root, svcDir: '.svc', hashFiles: ['assets/*'] });
  t.equal(withAssets.contentHash, 'ef7489e224ef97af3aaaaabd8f98bb66928f3957274b26eca65274d0d51b0358');
  t.same(withAssets.resolvedHashFiles, ['assets/logo.txt']);
  t.equal(withAssets.assetDigest, DOCUMENTED_DIGESTS.assetDigest);

  t.same(await hashWorkflowTree({ repoRoot: root, hashFiles: [] }), plain, 'an empty hashFiles list is the same as none');
  const none = await hashWorkflowTree({ repoRoot: root, hashFiles: ['nothing/**'] });
  t.same(none.resolvedHashFiles, []);
  t.not(none.contentHash, plain.contentHash);
  t.same(none.warnings.map((w) => w.code), ['hashfiles-no-match']);
});

t.test('relative repoRoot and custom svcDir; bad locations are refused', async (t) => {
  const root = await treeFrom(t, { 'ci/workflows/ci.ts': "export default 'ci';\n", 'ci/README.md': 'hi\n' });
  const viaRelative = await hashWorkflowTree({ repoRoot: path.relative(process.cwd(), root), svcDir: 'ci' });
  t.equal(viaRelative.treeDigest, DOCUMENTED_DIGESTS.treeDigest, 'same files, same digest, wherever the directory is');
  await t.rejects(hashWorkflowTree({ repoRoot: root }), { code: 'SVC_ERR_COMPILE_SVC_DIR_MISSING' });
  await t.rejects(hashWorkflowTree({ repoRoot: root, svcDir: '../ci' }), { code: 'SVC_ERR_COMPILE_PATH_OUTSIDE_REPO' });
  await t.rejects(hashWorkflowTree({ repoRoot: path.join(root, 'nope'), svcDir: 'ci' }), { code: 'SVC_ERR_COMPILE_SVC_DIR_MISSING' });
  await t.rejects(hashWorkflowTree({ repoRoot: root, svcDir: 'ci', hashFiles: ['/etc/passwd'] }), { code: 'SVC_ERR_COMPILE_HASHFILES_PATTERN' });
});

t.test('a hasher walks the tree once for many workflows', async (t) => {
  const root = await treeFrom(t, { '.svc/a.ts': 'a\n', 'x/1.txt': '1\n' });
  const hasher = createTreeHasher({ repoRoot: root });
  const first = await hasher.hashWorkflow();
  await writeFile(path.join(root, '.svc/a.ts'), 'changed\n');
  const second = await hasher.hashWorkflow(['x/*']);
  t.equal(second.treeDigest, first.treeDigest, 'the tree is hashed once per hasher');
  t.equal(await hasher.tree(), await hasher.tree());
  t.not((await createTreeHasher({ repoRoot: root }).hashWorkflow()).treeDigest, first.treeDigest, 'a new hasher sees the change');
});

t.test('100 workflows, a large ignored node_modules: hashing well inside the compile budget', async (t) => {
  const spec: TreeSpec = { '.svc/package.json': '{ "name": "ci" }\n', '.svc/package-lock.json': '{}\n', '.svc/.svcignore': 'node_modules/\ntypes/\n' };
  for (let i = 0; i < 100; i++) spec[`.svc/workflows/w${i}.ts`] = `export default { name: 'w${i}', jobs: { build: { steps: [] } } };\n`.repeat(20);
  for (let i = 0; i < 30; i++) spec[`.svc/lib/m${i}.ts`] = `export const m${i} = ${i};\n`;
  for (let i = 0; i < 2000; i++) spec[`.svc/node_modules/p${i % 50}/f${i}.js`] = 'module.exports = {};\n';
  for (let i = 0; i < 20; i++) spec[`assets/a${i}.txt`] = `${i}\n`;
  const root = await treeFrom(t, spec);
  const started = performance.now();
  const hasher = createTreeHasher({ repoRoot: root });
  const results = [];
  for (let i = 0; i < 100; i++) results.push(await hasher.hashWorkflow(i % 10 === 0 ? ['assets/*.txt'] : undefined));
  const lock = await lockfileHash(root);
  const siblings = await siblingsDigest(root);
  const elapsed = performance.now() - started;
  t.comment(`hashed 100 workflows (${results[0]!.files.length} covered files) in ${elapsed.toFixed(1)} ms`);
  t.equal(results[0]!.files.length, 133);
  t.match(lock, /^npm:/);
  t.equal(siblings, undefined);
  t.equal(new Set(results.map((r) => r.contentHash)).size, 2);
});

t.test('docs/content-hash.md states the digests the code produces', async (t) => {
  const doc = await readFile(new URL('../../../docs/content-hash.md', import.meta.url), 'utf8');
  for (const [name, hex] of Object.entries(DOCUMENTED_DIGESTS)) t.ok(doc.includes(hex), `${name} ${hex} is in the doc`);
  const root = await treeFrom(t, DOCUMENTED_EXAMPLE);
  const result = await hashWorkflowTree({ repoRoot: root, hashFiles: ['assets/*'] });
  t.ok(doc.includes(result.contentHash));
  t.ok(doc.includes(result.treeDigest));
});
