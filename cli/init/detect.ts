// What `svc init` finds at the repository root, and the steps of a first workflow that passes on
// it: a Node package (its package manager from the lock file, a step per lint/build/test script
// that exists), a Go module, a Python project, a Cargo crate, a Makefile, or nothing (one step
// that lists the files, which passes in an empty repository). The first match in that order
// wins; only the root is looked at. Every command runs through `ctx.$` (no shell: words split on
// spaces), so each is one program and its arguments.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';

export type ProjectKind = 'npm' | 'pnpm' | 'yarn' | 'bun' | 'go' | 'python' | 'cargo' | 'make' | 'none';

export interface DetectedStep {
  /** Step name in the generated workflow (`install`, `lint`, `build`, `test`, …). */
  name: string;
  /** Commands run in order, each as `ctx.$\`<command>\``. */
  commands: string[];
}

export interface Detection {
  kind: ProjectKind;
  /** What it is, for people: `npm project`, `Go module`, … */
  label: string;
  /** The root files that decided it (`package-lock.json`), or why nothing was found. */
  basis: string;
  steps: DetectedStep[];
  /** What was seen and deliberately left out (a placeholder test script, …). */
  notes: string[];
}

type Entries = ReadonlyMap<string, 'file' | 'dir'>;

async function rootEntries(root: string): Promise<Entries> {
  const entries = new Map<string, 'file' | 'dir'>();
  const list = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const e of list) {
    if (e.isFile()) entries.set(e.name, 'file');
    else if (e.isDirectory()) entries.set(e.name, 'dir');
    else if (e.isSymbolicLink()) {
      const target = await stat(path.join(root, e.name)).catch(() => undefined);
      if (target?.isFile() === true) entries.set(e.name, 'file');
      else if (target?.isDirectory() === true) entries.set(e.name, 'dir');
    }
  }
  return entries;
}

const read = (root: string, name: string): Promise<string> => readFile(path.join(root, name), 'utf8').catch(() => '');

/** Lock files in the order they decide the package manager (npm first when several exist). */
const NODE_LOCKS: ReadonlyArray<{ file: string; manager: 'npm' | 'pnpm' | 'yarn' | 'bun' }> = [
  { file: 'package-lock.json', manager: 'npm' },
  { file: 'npm-shrinkwrap.json', manager: 'npm' },
  { file: 'pnpm-lock.yaml', manager: 'pnpm' },
  { file: 'yarn.lock', manager: 'yarn' },
  { file: 'bun.lock', manager: 'bun' },
  { file: 'bun.lockb', manager: 'bun' },
];

const FROZEN_INSTALL: Record<'npm' | 'pnpm' | 'yarn' | 'bun', string> = {
  npm: 'npm ci',
  pnpm: 'pnpm install --frozen-lockfile',
  yarn: 'yarn install --frozen-lockfile',
  bun: 'bun install --frozen-lockfile',
};

/** The test script `npm init` writes: it always fails, so it gets no step. */
export function isPlaceholderTestScript(script: string): boolean {
  return /no test specified/i.test(script) && /exit 1/.test(script);
}

function detectNode(entries: Entries, text: string): Detection {
  const notes: string[] = [];
  let pkg: { scripts?: unknown; packageManager?: unknown } = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) pkg = parsed as typeof pkg;
    else notes.push('package.json is not a JSON object');
  } catch {
    notes.push('package.json is not valid JSON');
  }
  const lock = NODE_LOCKS.find((l) => entries.get(l.file) === 'file');
  // Without a lock file, `packageManager` ("pnpm@9.1.0") names the manager, else npm.
  const declared = typeof pkg.packageManager === 'string' ? /^(npm|pnpm|yarn|bun)@/.exec(pkg.packageManager)?.[1] : undefined;
  const manager = lock?.manager ?? (declared as 'npm' | 'pnpm' | 'yarn' | 'bun' | undefined) ?? 'npm';
  const install = lock !== undefined ? FROZEN_INSTALL[manager] : `${manager} install`;
  const scripts = pkg.scripts !== null && typeof pkg.scripts === 'object' ? (pkg.scripts as Record<string, unknown>) : {};
  const steps: DetectedStep[] = [{ name: 'install', commands: [install] }];
  for (const name of ['lint', 'build', 'test']) {
    const script = scripts[name];
    if (typeof script !== 'string' || script.trim() === '') continue;
    if (name === 'test' && isPlaceholderTestScript(script)) {
      notes.push('the "test" script is the `npm init` placeholder that always fails: no test step');
      continue;
    }
    steps.push({ name, commands: [`${manager} run ${name}`] });
  }
  return {
    kind: manager,
    label: `${manager} project`,
    basis: lock !== undefined ? lock.file : `package.json, no lock file${declared !== undefined ? `, packageManager ${declared}` : ''}`,
    steps,
    notes,
  };
}

/** Whether pytest has something to run: a tests/ or test/ directory, root test modules, or pytest configuration. */
function hasPythonTests(entries: Entries, pyproject: string): string | undefined {
  for (const dir of ['tests', 'test']) if (entries.get(dir) === 'dir') return `${dir}/`;
  for (const [name, type] of entries) if (type === 'file' && /^(test_.*|.*_test)\.py$/.test(name)) return name;
  if (/^\s*\[tool\.pytest[.\]]/m.test(pyproject)) return '[tool.pytest]';
  if (entries.get('pytest.ini') === 'file') return 'pytest.ini';
  return undefined;
}

function detectPython(entries: Entries, pyproject: string): Detection {
  // A pyproject.toml that only configures tools (black, ruff) describes nothing to install.
  const installable = /^\s*\[(project|build-system)\]/m.test(pyproject) || entries.get('setup.py') === 'file';
  const tests = hasPythonTests(entries, pyproject);
  const venv = '.venv/bin/python';
  const steps: DetectedStep[] = [];
  if (installable || tests !== undefined) {
    // A virtual environment: system Pythons often refuse `pip install` outside one (PEP 668).
    const commands = ['python3 -m venv .venv'];
    if (installable) commands.push(`${venv} -m pip install .`);
    if (tests !== undefined) commands.push(`${venv} -m pip install pytest`);
    steps.push({ name: 'install', commands });
  }
  if (tests !== undefined) steps.push({ name: 'test', commands: [`${venv} -m pytest`] });
  if (steps.length === 0) steps.push({ name: 'compile', commands: ['python3 -m compileall -q .'] });
  return {
    kind: 'python',
    label: 'Python project',
    basis: ['pyproject.toml', ...(tests === undefined ? [] : [tests])].join(', '),
    steps,
    notes: installable ? [] : ['pyproject.toml has no [project] or [build-system] section: nothing to pip install'],
  };
}

/** Whether a Makefile has a `test` target (`test:` or `test::`, alone or among other targets; not `test := …`). */
export function hasMakeTarget(makefile: string, target: string): boolean {
  for (const line of makefile.split(/\r?\n/)) {
    const m = /^([^\s:=#][^:=#]*):(?![:]?=)/.exec(line);
    if (m !== null && m[1]!.trim().split(/\s+/).includes(target)) return true;
  }
  return false;
}

/** What the repository root holds and the workflow steps that build and test it. */
export async function detectProject(root: string): Promise<Detection> {
  const entries = await rootEntries(root);
  if (entries.get('package.json') === 'file') return detectNode(entries, await read(root, 'package.json'));
  if (entries.get('go.mod') === 'file') {
    return { kind: 'go', label: 'Go module', basis: 'go.mod', steps: [{ name: 'build', commands: ['go build ./...'] }, { name: 'test', commands: ['go test ./...'] }], notes: [] };
  }
  if (entries.get('pyproject.toml') === 'file') return detectPython(entries, await read(root, 'pyproject.toml'));
  if (entries.get('Cargo.toml') === 'file') {
    return { kind: 'cargo', label: 'Cargo crate', basis: 'Cargo.toml', steps: [{ name: 'build', commands: ['cargo build'] }, { name: 'test', commands: ['cargo test'] }], notes: [] };
  }
  const makefile = ['GNUmakefile', 'makefile', 'Makefile'].find((name) => entries.get(name) === 'file');
  if (makefile !== undefined) {
    const steps: DetectedStep[] = [{ name: 'build', commands: ['make'] }];
    if (hasMakeTarget(await read(root, makefile), 'test')) steps.push({ name: 'test', commands: ['make test'] });
    return { kind: 'make', label: 'Makefile project', basis: makefile, steps, notes: [] };
  }
  return {
    kind: 'none',
    label: 'no project files',
    basis: 'no package.json, go.mod, pyproject.toml, Cargo.toml or Makefile',
    steps: [{ name: 'files', commands: ['ls -la'] }],
    notes: [],
  };
}

/** `detected    npm project (package-lock.json): steps install, lint, test` (without the prefix). */
export function describeDetection(d: Detection): string {
  return `${d.label} (${d.basis}): steps ${d.steps.map((s) => s.name).join(', ')}`;
}
