// Cold start to the first green run: `svc dev --example examples/quickstart --push` as a real
// child process on a fresh data directory (embedded PostgreSQL initdb included), timed from the
// spawn to the `ci` run's `completed`. Prints each phase as svc dev reports it, then the figure
// (target: under 30 s). Figures only, no assertions.
// Run: node bench/first-run.ts [repeats=1] [--dist]   (--dist: the compiled bin, as `npm start`)
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const useDist = process.argv.includes('--dist');
const repeats = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 1);
const bin = useDist ? join(ROOT, 'dist/bin/svc.js') : join(ROOT, 'bin/svc.ts');
const TARGET_MS = 30_000;
const LIMIT_MS = 180_000;

interface Sample {
  totalMs: number;
  marks: Array<{ at: number; what: string }>;
}

async function once(): Promise<Sample> {
  const root = await mkdtemp(join(tmpdir(), 'svc-bench-first-run-'));
  const started = performance.now();
  const marks: Sample['marks'] = [];
  const mark = (what: string) => marks.push({ at: performance.now() - started, what });
  const child = spawn(process.execPath, [bin, 'dev', '--json', '--example', join(ROOT, 'examples/quickstart'), '--data-dir', join(root, 'data'), '--port', '0', '--relay-port', '0', '--push'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  try {
    const total = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no green run within ${LIMIT_MS / 1000}s\n${stderr}`)), LIMIT_MS);
      let buffered = '';
      let firstRunSeen = false;
      child.stdout.on('data', (d: Buffer) => {
        buffered += d.toString();
        let nl: number;
        while ((nl = buffered.indexOf('\n')) >= 0) {
          const event = JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>;
          buffered = buffered.slice(nl + 1);
          if (event['event'] === 'progress') mark(`${String(event['phase'])} (${String(event['ms'])} ms)`);
          else if (event['event'] === 'ready') mark('ready');
          else if (event['event'] === 'run' && !firstRunSeen) {
            firstRunSeen = true;
            mark(`first run event (${String(event['status'])})`);
          } else if (event['event'] === 'job' && event['status'] === 'completed') mark(`job ${String(event['job'])} completed`);
          else if (event['event'] === 'run' && event['workflow'] === 'ci' && ['completed', 'failed', 'cancelled'].includes(String(event['status']))) {
            clearTimeout(timer);
            mark(`ci ${String(event['status'])}`);
            if (event['status'] === 'completed') resolve(performance.now() - started);
            else reject(new Error(`ci ended ${String(event['status'])}: ${String(event['reason'])}`));
          } else if (event['event'] === 'error') {
            clearTimeout(timer);
            reject(new Error(`${String(event['code'])}: ${String(event['message'])}`));
          }
        }
      });
      void exited.then((code) => reject(new Error(`svc dev exited ${code}\n${stderr}`)));
    });
    return { totalMs: total, marks };
  } finally {
    child.kill('SIGINT');
    await exited;
    await rm(root, { recursive: true, force: true });
  }
}

const samples: Sample[] = [];
for (let i = 0; i < repeats; i += 1) {
  const sample = await once();
  samples.push(sample);
  console.log(`run ${i + 1}/${repeats} (${useDist ? 'dist' : 'sources'}):`);
  for (const m of sample.marks) console.log(`  ${(m.at / 1000).toFixed(2).padStart(6)} s  ${m.what}`);
}
const sorted = samples.map((s) => s.totalMs).sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)]!;
console.log(`cold start to first green run: median ${(median / 1000).toFixed(1)} s over ${samples.length} (min ${(sorted[0]! / 1000).toFixed(1)} s, max ${(sorted[sorted.length - 1]! / 1000).toFixed(1)} s); target < ${TARGET_MS / 1000} s: ${median < TARGET_MS ? 'met' : 'NOT met'}`);
