// The build's tarballs: the source bundle is exactly what the content hash covers (plus the
// lock files), byte-identical across builds; the dependency tarball has the layout the agent's
// restore expects (extracted into .svc/ it yields .svc/node_modules/…).
import { chmod, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import t from 'tap';
import * as tar from 'tar';
import { installDependencies } from '../../../agent/build-job/deps.ts';
import { bundleSource } from '../../../agent/build-job/source-bundle.ts';
import { FIXED_MTIME } from '../../../agent/build-job/tarball.ts';
import { pathWithNode, restoreDeps } from '../../../agent/jobs/restore.ts';
import { hashWorkflowTree } from '../../../workflow/hash/index.ts';
import { fileServer, tempDir } from '../fixtures/trees.ts';


async function write(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(join(root, rel, '..'), { recursive: true });
    await writeFile(join(root, rel), text);
  }
}

async function entries(file: string): Promise<Array<{ path: string; type: string; mode: number; mtime: number; uid: number | undefined }>> {
  const out: Array<{ path: string; type: string; mode: number; mtime: number; uid: number | undefined }> = [];
  await tar.t({ file, onReadEntry: (e) => void out.push({ path: e.path, type: e.type, mode: e.mode ?? 0, mtime: e.mtime?.getTime() ?? 0, uid: e.uid }) });
  return out;
}

t.test('source bundle: what is hashed, plus the locks; deterministic; symlinks as targets', async (t) => {
  const tmp = await tempDir('svc-bundle-');
  t.teardown(tmp.cleanup);
  const repo = join(tmp.dir, 'repo');
  await write(repo, {
    '.svc/workflows/ci.ts': 'export default 1;\n',
    '.svc/lib/util.ts': 'export const u = 1;\n',
    '.svc/node_modules/dep/index.js': 'module.exports = 1;\n',
    '.svc/types/svc.d.ts': 'declare const x: 1;\n',
    '.svc/package.json': '{"name":"wf"}\n',
    '.svc/package-lock.json': '{"lockfileVersion":3}\n',
    '.svc/svc.lock.json': '{"workflows":[]}\n',
    '.svc/.npmrc': '//registry.example/:_authToken=secret\n',
    'shared/config.json': '{"a":1}\n',
    'shared/other.txt': 'not hashed\n',
    'outside.txt': 'linked\n',
  });
  await chmod(join(repo, '.svc/lib/util.ts'), 0o700);
  await symlink('../../outside.txt', join(repo, '.svc/lib/linked.txt'));

  const a = await bundleSource({ repoRoot: repo, workDir: join(tmp.dir, 'a'), hashFiles: ['shared/*.json'] });
  const b = await bundleSource({ repoRoot: repo, workDir: join(tmp.dir, 'b'), hashFiles: ['shared/*.json'] });
  t.equal(a.sha256, b.sha256, 'two bundles of one tree are byte-identical');
  t.same(a.files, [
    '.svc/lib/linked.txt',
    '.svc/lib/util.ts',
    '.svc/package-lock.json',
    '.svc/package.json',
    '.svc/svc.lock.json',
    '.svc/workflows/ci.ts',
    'shared/config.json',
  ].sort());
  const listed = await entries(a.file);
  const paths = listed.map((e) => e.path.replace(/\/$/, ''));
  t.notOk(paths.some((p) => p.includes('node_modules') || p.includes('types/') || p.endsWith('.npmrc')), 'excluded paths are not bundled');
  t.ok(listed.every((e) => e.mtime === FIXED_MTIME.getTime() || e.type === 'Directory'), 'fixed mtimes');
  t.ok(listed.every((e) => e.uid === undefined || e.uid === 0), 'no owner ids');
  t.equal(listed.find((e) => e.path === '.svc/lib/util.ts')?.mode, 0o755, 'modes normalized (executable bit kept)');
  t.equal(listed.find((e) => e.path === '.svc/lib/linked.txt')?.type, 'File', 'a symlink is bundled as its target');

  // What is bundled is what is hashed: the extracted bundle has the tree's contentHash.
  const out = join(tmp.dir, 'extracted');
  await mkdir(out);
  await tar.x({ file: a.file, cwd: out });
  const original = await hashWorkflowTree({ repoRoot: repo, hashFiles: ['shared/*.json'] });
  const extracted = await hashWorkflowTree({ repoRoot: out, hashFiles: ['shared/*.json'] });
  t.equal(extracted.contentHash, original.contentHash);
  t.equal(await readFile(join(out, '.svc/lib/linked.txt'), 'utf8'), 'linked\n');

  // A change to a covered file changes the digest; a lock given as text replaces the file.
  const withLock = await bundleSource({ repoRoot: repo, workDir: join(tmp.dir, 'c'), lockText: '{"compiled":"in memory"}' });
  t.not(withLock.sha256, a.sha256);
  t.equal(await readFile(join(withLock.stageDir, '.svc/svc.lock.json'), 'utf8'), '{"compiled":"in memory"}');
});

t.test('source bundle: bad trees are refused clearly', async (t) => {
  const tmp = await tempDir('svc-bundle-bad-');
  t.teardown(tmp.cleanup);
  const noLock = join(tmp.dir, 'no-lock');
  await write(noLock, { '.svc/workflows/ci.ts': 'export default 1;\n' });
  await t.rejects(bundleSource({ repoRoot: noLock, workDir: join(tmp.dir, 'w1') }), { code: 'SVC_ERR_BUILD_NO_LOCK', message: /svc compile/ });
  await t.rejects(bundleSource({ repoRoot: join(tmp.dir, 'missing'), workDir: join(tmp.dir, 'w2') }), { code: /^SVC_ERR_/ });
  const dangling = join(tmp.dir, 'dangling');
  await write(dangling, { '.svc/workflows/ci.ts': 'export default 1;\n', '.svc/svc.lock.json': '{}' });
  await symlink('nowhere.txt', join(dangling, '.svc/workflows/gone.ts'));
  await t.rejects(bundleSource({ repoRoot: dangling, workDir: join(tmp.dir, 'w3') }), { message: /points to nothing/ });
  await t.rejects(bundleSource({ repoRoot: noLock, workDir: join(tmp.dir, 'w4'), hashFiles: ['../escape'] }), { message: /must not contain `\.\.`/ });
});

t.test('dependency tarball: npm ci output, layout the restore expects, deterministic', async (t) => {
  const tmp = await tempDir('svc-deps-');
  const files = await fileServer();
  t.teardown(async () => {
    await files.close();
    await tmp.cleanup();
  });
  const pkg = join(tmp.dir, 'pkg');
  await write(pkg, { 'package/package.json': '{"name":"greet","version":"1.0.0","main":"index.js","bin":{"greet":"cli.js"}}', 'package/index.js': "module.exports = (n) => 'hello ' + n;\n", 'package/cli.js': '#!/usr/bin/env node\n' });
  const svc = join(tmp.dir, 'svc');
  await mkdir(join(svc, 'vendor'), { recursive: true });
  await tar.c({ gzip: true, file: join(svc, 'vendor/greet-1.0.0.tgz'), cwd: pkg, portable: true, mtime: FIXED_MTIME }, ['package']);
  await writeFile(join(svc, 'package.json'), JSON.stringify({ name: 'wf', private: true, dependencies: { greet: 'file:vendor/greet-1.0.0.tgz' } }));
  const env = { PATH: pathWithNode(), HOME: tmp.dir, npm_config_cache: join(tmp.dir, 'npm-cache'), LANG: 'C.UTF-8' };
  await execa('npm', ['install', '--package-lock-only', '--ignore-scripts', '--offline', '--no-audit', '--no-fund'], { cwd: svc, env, extendEnv: false });

  const signal = new AbortController().signal;
  const logs: string[] = [];
  const one = await installDependencies({ svcCopy: svc, out: join(tmp.dir, 'deps1.tar.gz'), env, signal, log: (l) => logs.push(l) });
  await execa('rm', ['-rf', join(svc, 'node_modules')]);
  const two = await installDependencies({ svcCopy: svc, out: join(tmp.dir, 'deps2.tar.gz'), env, signal, log: (l) => logs.push(l) });
  t.equal(one.sha256, two.sha256, 'two installs of one lockfile give the same depsHash');
  t.match(logs[0], /npm ci --ignore-scripts/);
  const listed = await entries(one.file);
  t.ok(listed.length > 0 && listed.every((e) => e.path === 'node_modules' || e.path.startsWith('node_modules/')), 'entries are node_modules/…');
  t.ok(listed.some((e) => e.path === 'node_modules/.bin/greet' && e.type === 'SymbolicLink'), 'bin links stay links');

  // The agent's restore side extracts it into .svc/ of a job tree.
  files.put('deps', await readFile(one.file));
  const job = join(tmp.dir, 'job');
  await write(job, { 'src/.svc/package.json': '{}' });
  const outcome = await restoreDeps({ url: files.url('deps'), hash: `sha256:${one.sha256}`, jobRoot: job, srcDir: join(job, 'src'), log: () => undefined, signal, installEnv: env });
  t.equal(outcome, 'restored');
  const { stdout } = await execa(process.execPath, ['-e', "console.log(require('greet')('restore'))"], { cwd: join(job, 'src/.svc') });
  t.equal(stdout, 'hello restore', 'the restored package resolves from .svc/');

  // npm failures carry npm's own words; a copy without a lockfile is refused before npm runs.
  await writeFile(join(svc, 'vendor/greet-1.0.0.tgz'), 'not a tarball');
  await execa('rm', ['-rf', join(svc, 'node_modules')]);
  // (A fresh npm cache: the old one would serve the package by its integrity.)
  const fresh = { ...env, npm_config_cache: join(tmp.dir, 'npm-cache-2') };
  await t.rejects(installDependencies({ svcCopy: svc, out: join(tmp.dir, 'deps3.tar.gz'), env: fresh, signal, log: () => undefined }), { code: 'SVC_ERR_BUILD_NPM_CI', message: /npm ci failed with exit code \d+: .+/ });
  await t.rejects(installDependencies({ svcCopy: join(tmp.dir, 'pkg'), out: join(tmp.dir, 'deps4.tar.gz'), env, signal, log: () => undefined }), { code: 'SVC_ERR_BUILD_NO_PACKAGE_LOCK' });
});
