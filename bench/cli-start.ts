// The developer CLI's own floor, whole process: `svc --version`, `svc --help`, `svc compile` of one
// workflow and of 100 workflows × 5 jobs × 5 steps (bench/compile.ts's repository), and
// `svc preview push` over the 100 workflows with the committed lock fresh (the usual case: the
// pre-commit hook keeps it so) and with a workflow edited since (preview compiles in memory).
// Each is the compiled bin as shipped, spawned N times, interleaved; prints p50/p99 wall time, p50
// CPU (user + system, steadier than wall time on a busy machine) and the largest RSS, and the
// start-up share: what a one-workflow compile and `--version` cost next to the 100-workflow
// compile (the rest is the compile's own work).
// --base <git ref>: the same commands with that commit's CLI too, side by side in one run: the
// ref is checked out in a temporary `git worktree` (node_modules linked, `npm run build`'s steps
// without link-bins), kept under the OS temp dir for the next run; prints base / current per
// command (above 1: the current tree is faster). `--base-root <dir>` uses a built checkout instead.
// Targets: --version and --help ≤ 0.12 s, preview ≤ 0.5 s. Figures only, no assertions.
// Run: node bench/cli-start.ts [repeats=20] [--base HEAD~1 | --base-root DIR]   (`npm run build` first)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { workflowSource } from './compile.ts';
import { machineLine } from './lib/machine.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const { values, positionals } = parseArgs({ allowPositionals: true, options: { base: { type: 'string' }, 'base-root': { type: 'string' } } });
const repeats = Math.max(1, Math.min(200, Number(positionals[0] ?? 20)));
const TIME = '/usr/bin/time';

interface Variant {
  name: string;
  bin: string;
}

function binOf(root: string): string {
  const bin = join(root, 'dist/bin/svc.js');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run \`npm run build\` there first`);
  return bin;
}

function run(cmd: string, args: string[], cwd: string): void {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
}

/** A committed repository of `count` workflows (5 jobs × 5 steps each) with its lock. */
function repository(bin: string, count: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'));
  run('git', ['init', '-q', '-b', 'main'], dir);
  run('git', ['config', 'user.email', 'bench@example.com'], dir);
  run('git', ['config', 'user.name', 'bench'], dir);
  run(process.execPath, [bin, 'init'], dir);
  rmSync(join(dir, '.svc/workflows'), { recursive: true, force: true });
  mkdirSync(join(dir, '.svc/workflows'));
  for (let i = 0; i < count; i++) writeFileSync(join(dir, `.svc/workflows/wf-${String(i).padStart(3, '0')}.ts`), workflowSource(i));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/app.ts'), 'export const app = 1;\n');
  run(process.execPath, [bin, 'compile'], dir);
  run('git', ['add', '-A'], dir);
  run('git', ['commit', '-q', '-m', 'bench'], dir);
  return dir;
}

/** The base commit's CLI, built once in a worktree under the temp dir and kept there. */
function baseRoot(ref: string): string {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: ROOT, encoding: 'utf8' }).trim();
  const dir = join(tmpdir(), `svc-bench-base-${sha.slice(0, 12)}`);
  if (existsSync(join(dir, 'dist/bin/svc.js'))) return dir;
  if (!existsSync(dir)) execFileSync('git', ['worktree', 'add', '--detach', dir, sha], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  // The build script as that commit has it, without link-bins (it would point node_modules/.bin,
  // shared with this checkout, at the base's files).
  const script = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts: { build: string } }).scripts.build
    .replace(/\s*&&\s*node scripts\/link-bins\.ts/, '')
    // tsc would otherwise follow the link out of the worktree and refuse its declarations as not portable.
    // A commit that does not type-check still emits its JavaScript: its errors are printed, the build goes on.
    .replace('tsc -p tsconfig.build.json', '{ tsc -p tsconfig.build.json --preserveSymlinks || true; }');
  process.stdout.write(`building ${ref} (${sha.slice(0, 12)}) in ${dir}: ${script}\n`);
  execFileSync('/bin/sh', ['-c', script], { cwd: dir, stdio: ['ignore', process.stderr, 'inherit'], env: { ...process.env, PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env['PATH'] ?? ''}` } });
  return dir;
}

interface Sample {
  ms: number;
  cpuMs: number;
  rssKb: number;
}

function once(bin: string, args: string[], cwd: string): Sample {
  const out = join(tmpdir(), `svc-bench-cli-time-${process.pid}`);
  const withTime = existsSync(TIME);
  const started = performance.now();
  const r = withTime
    ? spawnSync(TIME, ['-f', '%U %S %M', '-o', out, process.execPath, bin, ...args], { cwd, encoding: 'utf8' })
    : spawnSync(process.execPath, [bin, ...args], { cwd, encoding: 'utf8' });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  const [user = NaN, sys = NaN, rss = NaN] = withTime ? readFileSync(out, 'utf8').trim().split('\n').at(-1)!.split(/\s+/).map(Number) : [];
  return { ms, cpuMs: (user + sys) * 1000, rssKb: rss };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

interface Case {
  label: string;
  args: string[];
  /** 'one' or 'many' (the 100-workflow repository); `prepare` runs before each sample. */
  repo: 'one' | 'many';
  targetMs?: number;
  prepare?: (dir: string) => void;
}

const EDIT = (dir: string) => writeFileSync(join(dir, '.svc/workflows/wf-001.ts'), workflowSource(1).replace("'main', ", "'trunk', "));
const CASES: Case[] = [
  { label: 'svc --version', args: ['--version'], repo: 'one', targetMs: 120 },
  { label: 'svc --help', args: ['--help'], repo: 'one', targetMs: 120 },
  { label: 'svc compile (1 workflow)', args: ['compile'], repo: 'one' },
  { label: 'svc compile (100 × 5 jobs × 5 steps)', args: ['compile'], repo: 'many' },
  { label: 'svc preview push (lock fresh)', args: ['preview', 'push'], repo: 'many', targetMs: 500, prepare: (dir) => run('git', ['checkout', '-q', '--', '.svc'], dir) },
  { label: 'svc preview push (workflow edited)', args: ['preview', 'push'], repo: 'many', targetMs: 500, prepare: EDIT },
];

const end = machineLine(false);
const variants: Variant[] = [{ name: 'current', bin: binOf(ROOT) }];
if (values['base-root'] !== undefined) variants.unshift({ name: 'base', bin: binOf(values['base-root']) });
else if (values.base !== undefined) variants.unshift({ name: `base ${values.base}`, bin: binOf(baseRoot(values.base)) });
process.stdout.write(`svc CLI, ${repeats} runs of each command per variant, interleaved, compiled bins (${variants.map((v) => `${v.name}: ${v.bin}`).join('; ')})\n`);

const repos = variants.map((v) => ({ one: repository(v.bin, 1), many: repository(v.bin, 100) }));
const samples = new Map<string, Sample[]>();
try {
  // One warm-up each (the compile cache's first fill is not what a user sees on every call).
  for (const [i, v] of variants.entries()) for (const c of CASES) {
    c.prepare?.(repos[i]![c.repo]);
    once(v.bin, c.args, repos[i]![c.repo]);
  }
  for (let r = 0; r < repeats; r++) {
    for (const c of CASES) {
      for (const [i, v] of variants.entries()) {
        const dir = repos[i]![c.repo];
        c.prepare?.(dir);
        const key = `${v.name}\0${c.label}`;
        samples.set(key, [...(samples.get(key) ?? []), once(v.bin, c.args, dir)]);
      }
    }
  }
} finally {
  for (const r of repos) for (const dir of Object.values(r)) rmSync(dir, { recursive: true, force: true });
  rmSync(join(tmpdir(), `svc-bench-cli-time-${process.pid}`), { force: true });
}

const f = (ms: number) => `${(ms / 1000).toFixed(3)} s`;
const p50 = (v: Variant, c: Case, field: 'ms' | 'cpuMs') => percentile((samples.get(`${v.name}\0${c.label}`) ?? []).map((s) => s[field]).sort((a, b) => a - b), 50);
for (const c of CASES) {
  for (const v of variants) {
    const xs = samples.get(`${v.name}\0${c.label}`)!;
    const ms = xs.map((s) => s.ms).sort((a, b) => a - b);
    const rss = Math.max(...xs.map((s) => s.rssKb));
    process.stdout.write(
      `${c.label.padEnd(38)} ${v.name.padEnd(14)} p50 ${f(percentile(ms, 50))}  p99 ${f(percentile(ms, 99))}  cpu p50 ${f(p50(v, c, 'cpuMs'))}  ` +
        `RSS ${Number.isFinite(rss) ? `${(rss / 1024).toFixed(0)} MB` : 'n/a'}${c.targetMs === undefined ? '' : `  (target ≤ ${f(c.targetMs)})`}\n`,
    );
  }
  if (variants.length === 2) {
    const [base, current] = variants as [Variant, Variant];
    process.stdout.write(`${''.padEnd(38)} base / current: wall ${(p50(base, c, 'ms') / p50(current, c, 'ms')).toFixed(2)}x, cpu ${(p50(base, c, 'cpuMs') / p50(current, c, 'cpuMs')).toFixed(2)}x\n`);
  }
}
const byLabel = (label: string) => CASES.find((c) => c.label.startsWith(label))!;
for (const v of variants) {
  const many = p50(v, byLabel('svc compile (100'), 'ms');
  const manyCpu = p50(v, byLabel('svc compile (100'), 'cpuMs');
  process.stdout.write(
    `start-up share (${v.name}): a 1-workflow compile is ${((100 * p50(v, byLabel('svc compile (1 '), 'ms')) / many).toFixed(0)} % of the 100-workflow compile's wall time ` +
      `(${((100 * p50(v, byLabel('svc compile (1 '), 'cpuMs')) / manyCpu).toFixed(0)} % of its CPU), \`svc --version\` ${((100 * p50(v, byLabel('svc --version'), 'ms')) / many).toFixed(0)} % ` +
      `(${((100 * p50(v, byLabel('svc --version'), 'cpuMs')) / manyCpu).toFixed(0)} % of its CPU)\n`,
  );
}
end();
