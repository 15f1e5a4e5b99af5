// Whole-process benchmark of `svc compile`: a generated repository of 100 workflows × 5 jobs ×
// 5 steps, compiled by a fresh `node bin/svc.ts compile` (and `node dist/bin/svc.js compile`
// when `npm run build` has produced dist/) several times. Prints wall time median/p99 and max
// RSS per variant, and the child's CPU time (steadier than wall time when the machine is busy).
// Target: ≤ 0.4 s wall and ≤ 150 MB RSS.
// Run: node bench/compile.ts [runs] [--keep]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const runs = Number(args.find((a) => /^\d+$/.test(a)) ?? 9);
const keep = args.includes('--keep');
const WORKFLOWS = 100;
const JOBS = 5;
const STEPS = 5;

/** One workflow file: 5 jobs chained by needs, 5 steps each, a push and a pr trigger. */
export function workflowSource(i: number): string {
  const jobs: string[] = [];
  for (let j = 0; j < JOBS; j++) {
    const steps = Array.from({ length: STEPS }, (_, k) => `      .step('step-${k}', async (ctx) => { await ctx.$\`echo ${i}-${j}-${k}\`; })`).join('\n');
    jobs.push(
      `    job${j}: job({\n      runsOn: ['linux', 'x64'],\n` +
        (j > 0 ? `      needs: ['job${j - 1}'],\n` : '') +
        (j === 0 ? `      matrix: { node: ['22', '24'] },\n` : '') +
        `      steps: (s) => s\n${steps},\n    }),`,
    );
  }
  return [
    `import { job, pr, push, workflow } from 'svc/sdk';`,
    ``,
    `export default workflow('wf-${String(i).padStart(3, '0')}', {`,
    `  on: [push({ branches: ['main', 'release/*'], paths: ['services/s${i}/**'] }), pr({ branches: ['main'] })],`,
    `  jobs: {`,
    ...jobs,
    `  },`,
    `});`,
    ``,
  ].join('\n');
}

export function generateRepository(dir: string): void {
  mkdirSync(path.join(dir, '.svc', 'workflows'), { recursive: true });
  writeFileSync(path.join(dir, '.svc', 'package.json'), JSON.stringify({ name: 'bench', private: true, type: 'module' }) + '\n');
  for (let i = 0; i < WORKFLOWS; i++) writeFileSync(path.join(dir, '.svc', 'workflows', `wf-${String(i).padStart(3, '0')}.ts`), workflowSource(i));
}

interface Sample {
  wallMs: number;
  /** user + system CPU of the child: steadier than wall time on a busy machine. */
  cpuMs: number;
  rssKb: number;
}

const hasTime = existsSync('/usr/bin/time');

function runOnce(dir: string, command: readonly string[], env: NodeJS.ProcessEnv = {}): Sample {
  const out = path.join(dir, '.time');
  const started = process.hrtime.bigint();
  const result = hasTime
    ? spawnSync('/usr/bin/time', ['-f', '%U %S %M', '-o', out, process.execPath, ...command], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env } })
    : spawnSync(process.execPath, [...command], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env } });
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new Error(`${command.join(' ')} exited ${result.status}: ${result.stderr}`);
  const [user = Number.NaN, sys = Number.NaN, rss = Number.NaN] = hasTime ? readFileSync(out, 'utf8').trim().split(/\s+/).slice(-3).map(Number) : [];
  return { wallMs, cpuMs: (user + sys) * 1000, rssKb: rss };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function measure(label: string, dir: string, command: readonly string[], env: NodeJS.ProcessEnv = {}): void {
  runOnce(dir, command, env); // warm the file and compile caches; also writes the lock the first time
  const samples = Array.from({ length: runs }, () => runOnce(dir, command, env));
  const wall = samples.map((s) => s.wallMs).sort((a, b) => a - b);
  const cpu = samples.map((s) => s.cpuMs).sort((a, b) => a - b);
  const rss = Math.max(...samples.map((s) => s.rssKb));
  const verdict = percentile(wall, 50) <= 400 && rss / 1024 <= 150 ? 'within target' : 'MISSES target (0.4 s, 150 MB)';
  process.stdout.write(
    `${label.padEnd(50)} runs ${runs}  wall median ${percentile(wall, 50).toFixed(0)} ms  p99 ${percentile(wall, 99).toFixed(0)} ms  ` +
      `cpu median ${percentile(cpu, 50).toFixed(0)} ms  ` +
      `max RSS ${Number.isNaN(rss) ? 'n/a' : `${(rss / 1024).toFixed(1)} MB`}  ${verdict}\n`,
  );
}

// Imported by bench/cli-start.ts for its repository: the bench runs only as the entry point.
if (import.meta.main) {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-compile-'));
  try {
    generateRepository(dir);
    execFileSync('git', ['init', '-q'], { cwd: dir });
    process.stdout.write(`repository: ${WORKFLOWS} workflows × ${JOBS} jobs × ${STEPS} steps in ${dir}\n`);
    measure('node bin/svc.ts compile', dir, [path.join(ROOT, 'bin', 'svc.ts'), 'compile']);
    measure('node bin/svc.ts compile --check', dir, [path.join(ROOT, 'bin', 'svc.ts'), 'compile', '--check']);
    measure('node bin/svc.ts compile (compile cache off)', dir, [path.join(ROOT, 'bin', 'svc.ts'), 'compile'], { NODE_DISABLE_COMPILE_CACHE: '1' });
    const dist = path.join(ROOT, 'dist', 'bin', 'svc.js');
    if (existsSync(dist)) {
      measure('node dist/bin/svc.js compile', dir, [dist, 'compile']);
      measure('node dist/bin/svc.js compile --check', dir, [dist, 'compile', '--check']);
      measure('node dist/bin/svc.js compile (compile cache off)', dir, [dist, 'compile'], { NODE_DISABLE_COMPILE_CACHE: '1' });
    } else {
      process.stdout.write('dist/bin/svc.js not built (npm run build): compiled variant skipped\n');
    }
    const lock = JSON.parse(readFileSync(path.join(dir, '.svc', 'svc.lock.json'), 'utf8')) as { workflows: unknown[] };
    process.stdout.write(`lock: ${lock.workflows.length} workflows\n`);
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
    else process.stdout.write(`kept ${dir}\n`);
  }
}
