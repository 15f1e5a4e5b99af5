// The `svc init` detector on real directories (no spawns): each kind of project, what decides
// its steps, and the workflow text built from a detection (it must compile: init.test.ts runs
// the generated workflows end to end).
import t from 'tap';
import { detectProject, describeDetection, hasMakeTarget, isPlaceholderTestScript, type Detection } from '../../../cli/init/detect.ts';
import { ciWorkflow } from '../../../cli/init/templates.ts';
import { tempRepo } from '../../fixtures/workflow-trees/index.ts';

const pkg = (scripts: Record<string, string> = {}, extra: Record<string, unknown> = {}) => JSON.stringify({ name: 'demo', version: '1.0.0', scripts, ...extra });
const stepsOf = (d: Detection) => d.steps.map((s) => [s.name, ...s.commands]);

t.test('npm: the lock file picks the manager, scripts pick the steps', async (t) => {
  const npm = await detectProject(tempRepo(t, { 'package.json': pkg({ lint: 'eslint .', test: 'node --test', start: 'node .' }), 'package-lock.json': '{}' }));
  t.equal(npm.kind, 'npm');
  t.equal(npm.basis, 'package-lock.json');
  t.same(stepsOf(npm), [['install', 'npm ci'], ['lint', 'npm run lint'], ['test', 'npm run test']]);
  t.equal(describeDetection(npm), 'npm project (package-lock.json): steps install, lint, test');

  const noLock = await detectProject(tempRepo(t, { 'package.json': pkg({ build: 'tsc', test: 'node --test' }) }));
  t.equal(noLock.kind, 'npm');
  t.equal(noLock.basis, 'package.json, no lock file');
  t.same(stepsOf(noLock), [['install', 'npm install'], ['build', 'npm run build'], ['test', 'npm run test']]);

  const none = await detectProject(tempRepo(t, { 'package.json': pkg() }));
  t.same(stepsOf(none), [['install', 'npm install']], 'no scripts: install only');

  const placeholder = await detectProject(tempRepo(t, { 'package.json': pkg({ test: 'echo "Error: no test specified" && exit 1' }), 'package-lock.json': '{}' }));
  t.same(stepsOf(placeholder), [['install', 'npm ci']], 'the npm init placeholder gets no step');
  t.match(placeholder.notes, [/placeholder/]);

  const broken = await detectProject(tempRepo(t, { 'package.json': '{ nope' }));
  t.equal(broken.kind, 'npm');
  t.match(broken.notes, ['package.json is not valid JSON']);
});

t.test('pnpm, yarn, bun from their lock files; packageManager without one', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['pnpm-lock.yaml', 'pnpm', 'pnpm install --frozen-lockfile'],
    ['yarn.lock', 'yarn', 'yarn install --frozen-lockfile'],
    ['bun.lockb', 'bun', 'bun install --frozen-lockfile'],
    ['bun.lock', 'bun', 'bun install --frozen-lockfile'],
  ];
  for (const [lock, kind, install] of cases) {
    const d = await detectProject(tempRepo(t, { 'package.json': pkg({ test: 'vitest run' }), [lock]: '' }));
    t.equal(d.kind, kind, lock);
    t.equal(d.basis, lock);
    t.same(stepsOf(d), [['install', install], ['test', `${kind} run test`]], lock);
  }
  const declared = await detectProject(tempRepo(t, { 'package.json': pkg({ lint: 'x' }, { packageManager: 'pnpm@9.1.0' }) }));
  t.equal(declared.kind, 'pnpm');
  t.same(stepsOf(declared), [['install', 'pnpm install'], ['lint', 'pnpm run lint']]);
  const both = await detectProject(tempRepo(t, { 'package.json': pkg(), 'package-lock.json': '{}', 'yarn.lock': '' }));
  t.equal(both.kind, 'npm', 'package-lock.json wins over yarn.lock');
});

t.test('go, cargo', async (t) => {
  const go = await detectProject(tempRepo(t, { 'go.mod': 'module example.com/x\n\ngo 1.22\n', 'Makefile': 'test:\n\tgo test\n' }));
  t.equal(go.kind, 'go');
  t.same(stepsOf(go), [['build', 'go build ./...'], ['test', 'go test ./...']]);
  const cargo = await detectProject(tempRepo(t, { 'Cargo.toml': '[package]\nname = "x"\n' }));
  t.equal(cargo.kind, 'cargo');
  t.same(stepsOf(cargo), [['build', 'cargo build'], ['test', 'cargo test']]);
});

t.test('python: install when there is a project, pytest only when there are tests', async (t) => {
  const project = '[project]\nname = "x"\nversion = "0.1.0"\n';
  const withTests = await detectProject(tempRepo(t, { 'pyproject.toml': project, 'tests/test_x.py': 'def test_x(): pass\n' }));
  t.equal(withTests.kind, 'python');
  t.equal(withTests.basis, 'pyproject.toml, tests/');
  t.same(stepsOf(withTests), [
    ['install', 'python3 -m venv .venv', '.venv/bin/python -m pip install .', '.venv/bin/python -m pip install pytest'],
    ['test', '.venv/bin/python -m pytest'],
  ]);
  const noTests = await detectProject(tempRepo(t, { 'pyproject.toml': project, 'src/x/__init__.py': '' }));
  t.same(stepsOf(noTests), [['install', 'python3 -m venv .venv', '.venv/bin/python -m pip install .']]);
  const configured = await detectProject(tempRepo(t, { 'pyproject.toml': `${project}\n[tool.pytest.ini_options]\naddopts = "-q"\n` }));
  t.equal(configured.basis, 'pyproject.toml, [tool.pytest]');
  t.same(configured.steps.map((s) => s.name), ['install', 'test']);
  const rootModule = await detectProject(tempRepo(t, { 'pyproject.toml': project, 'calc_test.py': '' }));
  t.same(rootModule.steps.map((s) => s.name), ['install', 'test']);
  const toolsOnly = await detectProject(tempRepo(t, { 'pyproject.toml': '[tool.black]\nline-length = 100\n' }));
  t.same(stepsOf(toolsOnly), [['compile', 'python3 -m compileall -q .']], 'tool configuration only: nothing to install or test');
  t.match(toolsOnly.notes, [/no \[project\] or \[build-system\]/]);
});

t.test('make: `make`, and `make test` only when a test target exists', async (t) => {
  const withTest = await detectProject(tempRepo(t, { Makefile: 'all:\n\tcc -o x x.c\n\ncheck test: all\n\t./x\n' }));
  t.equal(withTest.kind, 'make');
  t.same(stepsOf(withTest), [['build', 'make'], ['test', 'make test']]);
  const without = await detectProject(tempRepo(t, { makefile: 'all:\n\techo hi\n' }));
  t.equal(without.basis, 'makefile');
  t.same(stepsOf(without), [['build', 'make']]);
  t.ok(hasMakeTarget('test::\n\techo\n', 'test'), 'double-colon rule');
  t.notOk(hasMakeTarget('test := 1\nTESTS = a:b\n\ttest: nope\n.PHONY: test\n', 'test'), 'variables, recipe lines and .PHONY are not the target');
});

t.test('nothing recognised: one step that lists the files', async (t) => {
  const empty = await detectProject(tempRepo(t, { 'README.md': 'hello\n' }));
  t.equal(empty.kind, 'none');
  t.same(stepsOf(empty), [['files', 'ls -la']]);
  t.equal(describeDetection(empty), 'no project files (no package.json, go.mod, pyproject.toml, Cargo.toml or Makefile): steps files');
  t.equal((await detectProject(tempRepo(t, {}))).kind, 'none', 'an empty directory');
  t.ok(isPlaceholderTestScript('echo "Error: no test specified" && exit 1'));
  t.notOk(isPlaceholderTestScript('node --test'));
});

t.test('the workflow text: trigger on the branch, one linux job, a ctx.$ per command', async (t) => {
  const d = await detectProject(tempRepo(t, { 'package.json': pkg({ lint: 'x', test: 'y' }), 'package-lock.json': '{}' }));
  const text = ciWorkflow(d, "release/it's");
  t.match(text, "on: [push({ branches: ['release/it\\'s'] }), pr()],");
  t.match(text, "runsOn: ['linux'],");
  t.notMatch(text, /matrix/);
  t.match(text, /\.step\('install', async \(ctx\) => \{\n\s+await ctx\.\$`npm ci`;\n\s+\}\)\n\s+\.step\('lint'/);
  t.match(text, 'await ctx.$`npm run test`;');
  t.match(text, '`svc init` detected: npm project (package-lock.json).');
  const python = await detectProject(tempRepo(t, { 'pyproject.toml': '[project]\nname = "x"\n', 'tests/test_a.py': '' }));
  t.match(ciWorkflow(python, 'main'), /\.step\('install', async \(ctx\) => \{\n\s+await ctx\.\$`python3 -m venv \.venv`;\n\s+await ctx\.\$`\.venv\/bin\/python -m pip install \.`;/);
});
