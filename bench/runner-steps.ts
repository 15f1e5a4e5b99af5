// Step runner overhead: startup (fork → runner.ready, fork → exit for an empty job) and the
// per-step cost (a job of N trivial steps: first `running` to last step message, / N), plus the
// same with one `ctx.$\`true\`` per step (a process spawn each). Real child processes; medians of R runs.
// Figures only, no assertions. Run: node bench/runner-steps.ts [steps=200] [runs=5]
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRunner, type RunnerRun } from '../test/fixtures/run-runner.ts';

const N = Number(process.argv[2] ?? 200);
const RUNS = Number(process.argv[3] ?? 5);
const SHELL_N = Math.min(N, 50);

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-runner-'));
const file = join(dir, 'bench.ts');
await writeFile(
  file,
  `import { job, push, step, workflow } from 'svc/sdk';
const trivial = Array.from({ length: ${N} }, (_, i) => step(\`s\${i}\`, () => {}));
const shell = Array.from({ length: ${SHELL_N} }, (_, i) => step(\`sh\${i}\`, async (ctx) => void (await ctx.$\`true\`)));
export default workflow('bench', {
  on: push(),
  jobs: {
    empty: job({ runsOn: 'x', steps: [] }),
    trivial: job({ runsOn: 'x', steps: trivial }),
    shell: job({ runsOn: 'x', steps: shell }),
  },
});
`,
);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (ms: number) => `${ms.toFixed(2)} ms`;

interface Sample {
  total: number;
  ready: number;
  span: number;
}

async function sample(jobName: string): Promise<Sample> {
  let readyAt = 0;
  const t0 = performance.now();
  const run: RunnerRun = await runRunner({
    file,
    workflowName: 'bench',
    jobName,
    onMessage: (m) => {
      if (m.type === 'runner.ready') readyAt = performance.now();
    },
    timeoutMs: 120_000,
  });
  const total = performance.now() - t0;
  if (run.result?.status !== 'completed') throw new Error(`bench job ${jobName} ended ${run.result?.status}: ${run.result?.reason}`);
  const steps = run.steps();
  const first = steps.find((s) => s.status === 'running');
  const last = steps.at(-1);
  const span = first && last ? Date.parse(last.at) - Date.parse(first.at) : 0;
  return { total, ready: readyAt - t0, span };
}

async function series(jobName: string): Promise<Sample[]> {
  const out: Sample[] = [];
  for (let i = 0; i < RUNS; i++) out.push(await sample(jobName));
  return out;
}

try {
  process.stdout.write(`step runner: ${N} trivial steps, ${SHELL_N} shell steps, ${RUNS} runs each, medians (Node ${process.version})\n`);
  await sample('empty'); // warm the file system cache
  const empty = await series('empty');
  const trivial = await series('trivial');
  const shell = await series('shell');
  const emptyTotal = median(empty.map((s) => s.total));
  const rows: [string, number][] = [
    ['startup: fork → runner.ready', median(empty.map((s) => s.ready))],
    ['startup: fork → exit, empty job', emptyTotal],
    [`per step, trivial: in-runner span / ${N}`, median(trivial.map((s) => s.span / N))],
    [`${N} trivial steps: fork → exit`, median(trivial.map((s) => s.total))],
    [`per step, ctx.$\`true\`: in-runner span / ${SHELL_N}`, median(shell.map((s) => s.span / SHELL_N))],
  ];
  for (const [label, ms] of rows) process.stdout.write(`${label.padEnd(44)} ${fmt(ms).padStart(12)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
