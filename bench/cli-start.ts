// The developer CLI's own start: `svc --version`, `svc --help`, and `svc preview push` over a
// repository of 100 workflows × 5 jobs — once with the committed lock fresh (the usual case: the
// pre-commit hook keeps it so) and once with a workflow edited since the last compile (preview
// compiles in memory). Each is the compiled bin as shipped, spawned N times; prints p50, p99,
// min and max wall time and the largest RSS. Targets: --version and --help ≤ 0.12 s, preview
// ≤ 0.5 s. Figures only, no assertions.
// Run: node bench/cli-start.ts [repeats=20]   (needs `npm run build` first)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(ROOT, 'dist/bin/svc.js');
const repeats = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 20);
const TIME = '/usr/bin/time';

if (!existsSync(BIN)) {
  process.stderr.write('dist/bin/svc.js is missing: run `npm run build` first\n');
  process.exit(1);
}

function workflowSource(i: number): string {
  const step = "steps: (s) => s.step('x', async (ctx) => { await ctx.$`true`; })";
  const jobs = [
    `a: job({ runsOn: ['linux'], ${step} }),`,
    `b: job({ runsOn: ['linux'], needs: ['a'], ${step} }),`,
    `c: job({ runsOn: ['linux'], needs: ['a'], ${step} }),`,
    `d: job({ runsOn: ['linux'], needs: ['b', 'c'], ${step} }),`,
    `e: job({ runsOn: ['linux'], needs: ['d'], ${step} }),`,
  ];
  return [
    "import { job, pr, push, workflow } from 'svc/sdk';",
    `export default workflow('w${i}', {`,
    `  on: [push({ branches: ['main', 'release/*'], paths: ['src/**'] }), pr()],`,
    `  jobs: {\n    ${jobs.join('\n    ')}\n  },`,
    '});',
    '',
  ].join('\n');
}

function run(cmd: string, args: string[], cwd: string): void {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
}

function repository(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'));
  run('git', ['init', '-q', '-b', 'main'], dir);
  run('git', ['config', 'user.email', 'bench@example.com'], dir);
  run('git', ['config', 'user.name', 'bench'], dir);
  run(process.execPath, [BIN, 'init'], dir);
  rmSync(join(dir, '.svc/workflows'), { recursive: true, force: true });
  mkdirSync(join(dir, '.svc/workflows'));
  for (let i = 1; i <= 100; i++) writeFileSync(join(dir, `.svc/workflows/w${i}.ts`), workflowSource(i));
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/app.ts'), 'export const app = 1;\n');
  run(process.execPath, [BIN, 'compile'], dir);
  run('git', ['add', '-A'], dir);
  run('git', ['commit', '-q', '-m', 'bench'], dir);
  return dir;
}

interface Sample {
  ms: number;
  rssKb: number | undefined;
}

function once(args: string[], cwd: string): Sample {
  const withTime = existsSync(TIME);
  const started = performance.now();
  const r = withTime
    ? spawnSync(TIME, ['-f', '%M', process.execPath, BIN, ...args], { cwd, encoding: 'utf8' })
    : spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8' });
  const ms = performance.now() - started;
  if (r.status !== 0) throw new Error(`svc ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  const rss = withTime ? Number(r.stderr.trim().split('\n').at(-1)) : Number.NaN;
  return { ms, rssKb: Number.isFinite(rss) ? rss : undefined };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function measure(label: string, args: string[], cwd: string, targetMs: number): void {
  once(args, cwd); // the compile cache's first fill is not what a user sees on every call
  const samples = Array.from({ length: repeats }, () => once(args, cwd));
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const rss = Math.max(...samples.map((s) => s.rssKb ?? 0));
  const f = (n: number) => `${(n / 1000).toFixed(3)} s`;
  process.stdout.write(
    `${label.padEnd(34)} p50 ${f(percentile(ms, 50))}  p99 ${f(percentile(ms, 99))}  min ${f(ms[0]!)}  max ${f(ms.at(-1)!)}  ` +
      `RSS ${rss > 0 ? `${(rss / 1024).toFixed(0)} MB` : 'n/a'}  (target ≤ ${f(targetMs)})\n`,
  );
}

const load = () => loadavg().map((n) => n.toFixed(2)).join(' ');
process.stdout.write(`svc CLI start, ${repeats} runs each, compiled bin; load average at start: ${load()}\n`);
const dir = repository();
try {
  measure('svc --version', ['--version'], dir, 120);
  measure('svc --help', ['--help'], dir, 120);
  measure('svc preview push (lock fresh)', ['preview', 'push'], dir, 500);
  writeFileSync(join(dir, '.svc/workflows/w1.ts'), workflowSource(1).replace("'main', ", "'trunk', "));
  measure('svc preview push (workflow edited)', ['preview', 'push'], dir, 500);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`load average at end: ${load()}\n`);
