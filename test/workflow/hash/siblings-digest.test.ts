import { existsSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { computeSiblings, siblingsDigest } from '../../../workflow/hash/siblings-digest.ts';
import { buildTree, git, gitRepo, tempDir, treeFrom, type TreeSpec } from '../../fixtures/trees/build-tree.ts';

const pkg = (name: string, deps: Record<string, string> = {}, extra: Record<string, unknown> = {}): string =>
  `${JSON.stringify({ name, version: '1.0.0', dependencies: deps, ...extra }, null, 2)}\n`;

async function repo(t: Parameters<typeof treeFrom>[0], spec: TreeSpec, add?: string[]): Promise<string> {
  const root = await treeFrom(t, spec);
  gitRepo(root, add);
  return root;
}

t.test('no package.json or no sibling specifiers: omitted, and git is not needed', async (t) => {
  const bare = await treeFrom(t, { '.svc/workflows/ci.ts': '' });
  t.equal(await siblingsDigest(bare), undefined);
  const registryOnly = await treeFrom(t, { '.svc/package.json': pkg('ci', { svc: '^0.9.0', lodash: 'npm:lodash@4' }) });
  t.same(await computeSiblings(registryOnly), { siblings: [], files: [], warnings: [] }, 'not a git repo, yet no error: git was not run');
});

t.test('file: sibling, transitive through the sibling, untracked files ignored', async (t) => {
  const root = await repo(t, {
    '.svc/package.json': pkg('ci', { a: 'file:../packages/a' }),
    'packages/a/package.json': pkg('a', { b: 'link:../b' }),
    'packages/a/index.ts': 'export const a = 1;\r\n',
    'packages/b/package.json': pkg('b'),
    'packages/b/index.ts': 'export const b = 2;\n',
    'packages/unrelated/index.ts': 'x\n',
  });
  const result = await computeSiblings(root);
  t.same(result.siblings.map((s) => s.path), ['packages/a', 'packages/b']);
  t.same(result.siblings.map((s) => s.requiredBy), ['.svc/package.json', 'packages/a/package.json']);
  t.same(result.files, ['packages/a/index.ts', 'packages/a/package.json', 'packages/b/index.ts', 'packages/b/package.json']);
  t.match(result.siblingsDigest, /^[0-9a-f]{64}$/);
  t.same(result.warnings, []);
  const baseline = result.siblingsDigest;

  await writeFile(path.join(root, 'packages/a/untracked.ts'), 'not added\n');
  t.equal(await siblingsDigest(root), baseline, 'an untracked file does not count');
  await writeFile(path.join(root, 'packages/unrelated/index.ts'), 'changed\n');
  t.equal(await siblingsDigest(root), baseline, 'a package not depended on does not count');
  await writeFile(path.join(root, 'packages/a/index.ts'), 'export const a = 1;\n');
  t.equal(await siblingsDigest(root), baseline, 'CRLF→LF only: same digest');
  await writeFile(path.join(root, 'packages/b/index.ts'), 'export const b = 3;\n');
  t.not(await siblingsDigest(root), baseline, 'a tracked change in a transitive sibling changes the digest');
  await writeFile(path.join(root, 'packages/b/index.ts'), 'export const b = 2;\n');
  t.equal(await siblingsDigest(root), baseline);
  await rename(path.join(root, 'packages/b/index.ts'), path.join(root, 'packages/b/moved.ts'));
  t.not(await siblingsDigest(root), baseline, 'a tracked file deleted from the working tree drops out');
});

t.test('workspace: siblings resolve by name from root workspaces or pnpm-workspace.yaml', async (t) => {
  const spec: TreeSpec = {
    'package.json': pkg('root', {}, { private: true, workspaces: ['packages/*', '.svc'] }),
    '.svc/package.json': `${JSON.stringify({ name: 'ci', devDependencies: { '@acme/util': 'workspace:*' }, peerDependencies: { aliased: 'workspace:@acme/core@^1' } })}\n`,
    'packages/util/package.json': pkg('@acme/util', { '@acme/core': 'workspace:^' }),
    'packages/util/u.ts': 'u\n',
    'packages/core/package.json': pkg('@acme/core', { '@acme/util': 'workspace:*' }),
    'packages/core/c.ts': 'c\n',
    'packages/other/package.json': pkg('@acme/other'),
  };
  const npmStyle = await repo(t, spec);
  const viaNpm = await computeSiblings(npmStyle);
  t.same(viaNpm.siblings.map((s) => s.path), ['packages/core', 'packages/util'], 'aliases and a cycle between siblings are handled');

  const pnpmSpec: TreeSpec = { ...spec, 'package.json': pkg('root'), 'pnpm-workspace.yaml': "packages:\n  - 'packages/*'\n  - '!packages/other'\n" };
  const pnpmStyle = await repo(t, pnpmSpec);
  const viaPnpm = await computeSiblings(pnpmStyle);
  t.same(viaPnpm.siblings.map((s) => s.path), ['packages/core', 'packages/util']);
  t.equal(viaPnpm.siblingsDigest, viaNpm.siblingsDigest, 'same tracked files, same digest');

  const objectForm = await repo(t, { ...spec, 'package.json': pkg('root', {}, { workspaces: { packages: ['packages/**'] } }) });
  t.equal((await computeSiblings(objectForm)).siblingsDigest, viaNpm.siblingsDigest);
});

t.test('yarn path form, portal:, a sibling that depends back on .svc', async (t) => {
  const root = await repo(t, {
    '.svc/package.json': pkg('ci', { tools: 'workspace:../tools', p: 'portal:../portal' }),
    'tools/package.json': pkg('tools', { ci: 'file:../.svc' }),
    'tools/t.ts': 't\n',
    'portal/package.json': pkg('p'),
  });
  const result = await computeSiblings(root);
  t.same(result.siblings.map((s) => s.path), ['portal', 'tools']);
  t.notOk(result.files.some((f) => f.startsWith('.svc/')), '.svc/ files are covered by the tree digest, not here');
});

t.test('untracked sibling warns and digests nothing of it', async (t) => {
  const root = await repo(t, { '.svc/package.json': pkg('ci', { a: 'file:../a' }), 'a/package.json': pkg('a'), 'README.md': 'r\n' }, ['README.md']);
  const result = await computeSiblings(root);
  t.same(result.siblings.map((s) => s.path), ['a']);
  t.equal(result.siblingsDigest, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  t.same(result.warnings.map((w) => [w.code, w.path]), [['sibling-untracked', 'a']]);
});

t.test('tracked symlinks contribute their link text', async (t) => {
  const root = await repo(t, { '.svc/package.json': pkg('ci', { a: 'file:../a' }), 'a/package.json': pkg('a'), 'a/target.ts': 'x\n', 'a/link.ts': { symlink: 'target.ts' } });
  const before = await siblingsDigest(root);
  await writeFile(path.join(root, 'a/target.ts'), 'y\n');
  const after = await computeSiblings(root);
  t.ok(after.files.includes('a/link.ts'));
  t.not(after.siblingsDigest, before);
  await rm(path.join(root, 'a/link.ts'));
  await buildTree(root, { 'a/link.ts': { symlink: 'other.ts' } });
  t.not(await siblingsDigest(root), after.siblingsDigest, 'a retargeted link changes the digest even if dangling');
});

t.test('errors: outside the repository, missing, unknown workspace, bad JSON, not a git repo', async (t) => {
  const top = await tempDir(t);
  await buildTree(top, { 'outside/package.json': pkg('outside'), 'repo/.svc/package.json': pkg('ci', { o: 'file:../../outside' }) });
  gitRepo(path.join(top, 'repo'));
  await t.rejects(computeSiblings(path.join(top, 'repo')), { code: 'SVC_ERR_COMPILE_SIBLING_OUTSIDE_REPO', message: /outside the repository/ });

  const linked = await repo(t, { '.svc/package.json': pkg('ci', { o: 'link:../escape' }) });
  await buildTree(linked, { escape: { symlink: path.join(top, 'outside') } });
  await t.rejects(computeSiblings(linked), { code: 'SVC_ERR_COMPILE_SIBLING_OUTSIDE_REPO' }, 'a symlink inside the repo leading out');

  const missing = await repo(t, { '.svc/package.json': pkg('ci', { m: 'file:../missing' }) });
  await t.rejects(computeSiblings(missing), { code: 'SVC_ERR_COMPILE_SIBLING_NOT_FOUND', message: /missing/ });

  const unknown = await repo(t, { 'package.json': pkg('root', {}, { workspaces: ['packages/*'] }), '.svc/package.json': pkg('ci', { nope: 'workspace:*' }) });
  await t.rejects(computeSiblings(unknown), { code: 'SVC_ERR_COMPILE_SIBLING_NOT_FOUND', message: /no workspace package is named nope/ });

  const dup = await repo(t, {
    'package.json': pkg('root', {}, { workspaces: ['a', 'b'] }),
    'a/package.json': pkg('same'),
    'b/package.json': pkg('same'),
    '.svc/package.json': pkg('ci', { same: 'workspace:*' }),
  });
  await t.rejects(computeSiblings(dup), { code: 'SVC_ERR_COMPILE_WORKSPACE_AMBIGUOUS' });

  for (const [label, text] of [
    ['not JSON', '{ nope'],
    ['an array', '[]'],
    ['dependencies not an object', JSON.stringify({ dependencies: ['a'] })],
    ['a non-string specifier', JSON.stringify({ dependencies: { a: 1 } })],
    ['an empty file: path', JSON.stringify({ dependencies: { a: 'file:' } })],
  ] as const) {
    const bad = await treeFrom(t, { '.svc/package.json': text });
    await t.rejects(computeSiblings(bad), { code: 'SVC_ERR_COMPILE_PACKAGE_JSON_INVALID' }, label);
  }
  const badWorkspaces = await treeFrom(t, { 'package.json': JSON.stringify({ workspaces: 'packages/*' }), '.svc/package.json': pkg('ci', { a: 'workspace:*' }) });
  await t.rejects(computeSiblings(badWorkspaces), { code: 'SVC_ERR_COMPILE_PACKAGE_JSON_INVALID' });
  const badYaml = await treeFrom(t, { 'pnpm-workspace.yaml': 'packages: [unclosed', '.svc/package.json': pkg('ci', { a: 'workspace:*' }) });
  await t.rejects(computeSiblings(badYaml), { code: 'SVC_ERR_COMPILE_PACKAGE_JSON_INVALID' });

  const notGit = await treeFrom(t, { '.svc/package.json': pkg('ci', { a: 'file:../a' }), 'a/package.json': pkg('a') });
  await t.rejects(computeSiblings(notGit), { code: 'SVC_ERR_COMPILE_SIBLINGS_GIT', message: /git ls-files/ });
});

t.test('hostile names are passed to git as literal arguments', async (t) => {
  const name = 'we ird;$(touch pwned)*[x]';
  const root = await repo(t, { '.svc/package.json': pkg('ci', { w: `file:../${name}` }), [`${name}/package.json`]: pkg('w'), [`${name}/i.ts`]: 'i\n', 'weird-other/i.ts': 'o\n' });
  const result = await computeSiblings(root);
  t.same(result.files, [`${name}/i.ts`, `${name}/package.json`]);
  t.notOk(existsSync(path.join(root, 'pwned')), 'nothing ran through a shell');
  t.notOk(existsSync(path.join(root, '.svc', 'pwned')));
  t.match(git(root, ['ls-files']), /i\.ts/);
});
