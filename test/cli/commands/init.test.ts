// `svc init`, `svc types` and `svc workflows` in-process (runSvc → runCli) in temp repositories, and
// the first run `svc init` promises: init, compile and `svc run push --local` (a child process) pass
// in an empty repository and in a small npm project.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { parseLock } from '../../../workflow/lock/lock-file.ts';
import { DEFAULT_SVCIGNORE } from '../../../workflow/hash/index.ts';
import { commitAll, git, runSvc, tempRepo, writeFiles } from '../../fixtures/workflow-trees/index.ts';


const SCAFFOLD = ['.svc/.svcignore', '.svc/.gitignore', '.svc/workflows/ci.ts', '.svc/tests/ci.fixture.ts', '.svc/tsconfig.json', '.svc/package.json'];

t.test('init scaffolds .svc/, writes types and compiles a valid lock', async (t) => {
  const dir = tempRepo(t, { 'README.md': 'hello\n' }, { git: true });
  const result = await runSvc(dir, ['init', '--json']);
  t.equal(result.code, 0, result.stderr);
  const out = JSON.parse(result.stdout) as { created: string[]; workflows: string[]; lockPath: string; types: string; root: string; detected: unknown; branch: string };
  t.same(out.created, SCAFFOLD);
  t.same(out.detected, { kind: 'none', label: 'no project files', basis: 'no package.json, go.mod, pyproject.toml, Cargo.toml or Makefile', steps: ['files'], notes: [] });
  t.equal(out.branch, 'main');
  t.same(out.workflows, ['ci']);
  t.equal(out.lockPath, '.svc/svc.lock.json');
  t.equal(out.types, '.svc/types/svc-sdk.d.ts');
  t.equal(readFileSync(path.join(dir, '.svc/.svcignore'), 'utf8'), DEFAULT_SVCIGNORE);
  const lock = parseLock(readFileSync(path.join(dir, '.svc/svc.lock.json'), 'utf8'));
  const ci = lock.workflows[0]!;
  t.same(ci.triggers.map((tr) => tr.type), ['push', 'pr']);
  t.same(ci.jobs.map((j) => [j.name, j.runsOn, j.needs, j.matrix ?? null]), [['build', ['linux'], [], null]]);
  const pkg = JSON.parse(readFileSync(path.join(dir, '.svc/package.json'), 'utf8')) as { type: string; devDependencies: Record<string, string> };
  t.equal(pkg.type, 'module');
  t.match(pkg.devDependencies['svc'], /^\^\d+\.\d+\.\d+/);

  const check = await runSvc(dir, ['compile', '--check']);
  t.equal(check.code, 0, 'the lock init wrote is fresh');

  // the scaffolded workflow type-checks against the SDK through .svc/tsconfig.json
  const tsc = path.join(path.dirname(process.execPath), 'tsc');
  const tscBin = statSync(tsc, { throwIfNoEntry: false }) ? tsc : path.resolve('node_modules/.bin/tsc');
  // tap injects its loaders (NODE_OPTIONS) into every child it spawns, and TypeScript 7's ESM bin
  // cannot load through them: `env -u` drops them before tsc starts.
  const typecheck = () => spawnSync('env', ['-u', 'NODE_OPTIONS', tscBin, '-p', path.join(dir, '.svc/tsconfig.json')], { encoding: 'utf8' });
  const clean = typecheck();
  t.equal(clean.status, 0, `editor types resolve svc/sdk\n${clean.stdout}${clean.stderr}`);
  writeFileSync(path.join(dir, '.svc/workflows/ci.ts'), readFileSync(path.join(dir, '.svc/workflows/ci.ts'), 'utf8').replace("runsOn: ['linux'],", "runsOn: ['linux'],\n      needs: ['nope'],"));
  const broken = typecheck();
  t.not(broken.status, 0, 'an unknown need is a type error');
  t.match(broken.stdout, /ci\.ts\(\d+,\d+\): error TS\d+/, 'reported as a type error in the workflow file');
});

t.test('init refuses to overwrite and lists the files; --force overwrites', async (t) => {
  const dir = tempRepo(t, { '.svc/workflows/ci.ts': '// mine\n', '.svc/.svcignore': 'custom/\n' });
  const refused = await runSvc(dir, ['init']);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /SVC_ERR_INIT_FILES_EXIST: svc init would overwrite \.svc\/\.svcignore, \.svc\/workflows\/ci\.ts: .*--force/);
  t.equal(readFileSync(path.join(dir, '.svc/workflows/ci.ts'), 'utf8'), '// mine\n', 'nothing changed');
  t.throws(() => statSync(path.join(dir, '.svc/package.json')), 'no other file written');

  const forced = await runSvc(dir, ['init', '--force']);
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stdout, /overwritten \.svc\/workflows\/ci\.ts/);
  t.match(forced.stdout, /created {5}\.svc\/package\.json/);
  t.match(readFileSync(path.join(dir, '.svc/workflows/ci.ts'), 'utf8'), /workflow\('ci'/);
});

t.test('init --dir, and at the top of the git work tree from a subdirectory', async (t) => {
  const dir = tempRepo(t, { 'pkg/sub/x.txt': 'x\n' }, { git: true });
  const fromSub = await runSvc(path.join(dir, 'pkg', 'sub'), ['init']);
  t.equal(fromSub.code, 0, fromSub.stderr);
  t.ok(statSync(path.join(dir, '.svc/svc.lock.json')).isFile());
  const other = tempRepo(t, {});
  const explicit = await runSvc(dir, ['init', '--dir', path.join(other, 'proj')]);
  t.equal(explicit.code, 0, explicit.stderr);
  t.ok(statSync(path.join(other, 'proj/.svc/svc.lock.json')).isFile());
});

t.test('svc types writes the SDK re-export once', async (t) => {
  const dir = tempRepo(t, { '.svc/.svcignore': 'types/\n' });
  const first = await runSvc(dir, ['types', '--json']);
  t.equal(first.code, 0, first.stderr);
  t.match(JSON.parse(first.stdout), { path: '.svc/types/svc-sdk.d.ts', written: true, target: /sdk[/\\]index\.(ts|js)$/ });
  t.match(readFileSync(path.join(dir, '.svc/types/svc-sdk.d.ts'), 'utf8'), /export \* from ".*sdk\/index\.(ts|js)";/);
  const second = await runSvc(dir, ['types']);
  t.match(second.stdout, /unchanged/);
  const none = tempRepo(t, {});
  const missing = await runSvc(none, ['types']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /run `svc init` first/);
});

t.test('svc workflows lists the lock', async (t) => {
  const dir = tempRepo(t, {}, { git: true });
  t.equal((await runSvc(dir, ['init'])).code, 0);
  const text = await runSvc(dir, ['workflows']);
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, /^ci {2}\(\.svc\/workflows\/ci\.ts#default\)$/m);
  t.match(text.stdout, /on: {3}push\(branches: main\) \| pr\(actions: opened,reopened,synchronize\)/);
  t.match(text.stdout, /jobs: build$/m);
  const json = JSON.parse((await runSvc(dir, ['workflows', '--json'])).stdout) as { workflows: { name: string; jobs: { name: string; matrixSize?: number }[] }[] };
  t.same(json.workflows.map((w) => w.name), ['ci']);
  t.same(json.workflows[0]!.jobs.map((j) => [j.name, j.matrixSize]), [['build', undefined]]);

  writeFiles(dir, { '.svc/svc.lock.json': '{"broken": true}' });
  const broken = await runSvc(dir, ['workflows']);
  t.equal(broken.code, 1);
  t.match(broken.stderr, /SVC_ERR_LOCK_INVALID/);
  const none = tempRepo(t, { '.svc/.svcignore': '' });
  const missing = await runSvc(none, ['workflows']);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /SVC_ERR_LOCK_MISSING: .*run `svc compile`/);
});

t.test('first run: init, compile and run push --local pass in an empty repository', async (t) => {
  const dir = tempRepo(t, { 'README.md': 'hello\n' }, { git: true });
  commitAll(dir, 'readme');
  const init = await runSvc(dir, ['init']);
  t.equal(init.code, 0, init.stderr);
  t.match(init.stdout, /^detected {4}no project files \(no package\.json, go\.mod, pyproject\.toml, Cargo\.toml or Makefile\): steps files$/m);
  const compile = await runSvc(dir, ['compile']);
  t.equal(compile.code, 0, compile.stderr);
  const run = await runSvc(dir, ['run', 'push', '--local']);
  t.equal(run.code, 0, 'every job completed');
  if (run.code !== 0) t.comment(run.stdout + run.stderr);
  t.match(run.stdout, /\[build\] files \| .* README\.md$/m, 'the job sees the committed README');
  t.match(run.stdout, /summary: completed\n {2}ci: completed\n\s+completed\s+build/);
});

t.test('first run: init, compile and run push --local pass in a small npm project', async (t) => {
  const dir = tempRepo(t, {
    'package.json': `${JSON.stringify({ name: 'demo', version: '1.0.0', private: true, scripts: { test: 'node -e "console.log(\'demo tests pass\')"' } }, null, 2)}\n`,
    // What `npm install --package-lock-only` writes for a package without dependencies.
    'package-lock.json': `${JSON.stringify({ name: 'demo', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'demo', version: '1.0.0' } } }, null, 2)}\n`,
  }, { git: true });
  git(dir, ['checkout', '-q', '-b', 'develop']);
  commitAll(dir, 'package');
  const init = await runSvc(dir, ['init', '--json']);
  t.equal(init.code, 0, init.stderr);
  const out = JSON.parse(init.stdout) as { detected: { kind: string; steps: string[] }; branch: string };
  t.match(out, { detected: { kind: 'npm', basis: 'package-lock.json', steps: ['install', 'test'] }, branch: 'develop' });
  const workflow = readFileSync(path.join(dir, '.svc/workflows/ci.ts'), 'utf8');
  t.match(workflow, "push({ branches: ['develop'] })", 'the push trigger names the current branch');
  t.match(workflow, 'await ctx.$`npm ci`;');
  const compile = await runSvc(dir, ['compile']);
  t.equal(compile.code, 0, compile.stderr);
  const run = await runSvc(dir, ['run', 'push', '--local']);
  t.equal(run.code, 0, 'every job completed');
  if (run.code !== 0) t.comment(run.stdout + run.stderr);
  t.match(run.stdout, /\[build\] <== install completed/);
  t.match(run.stdout, /\[build\] test \| demo tests pass/);
  t.match(run.stdout, /summary: completed/);
});
