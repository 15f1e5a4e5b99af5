// The step runner's hand-over: a warm runner (forked, loaded, `runner.ready` said: the agent's
// spare) is given a job, and the time to its first step `running` is measured. This is the
// agent's `firstStep` phase. Each job's workflow file is a fresh copy in a new directory, as each
// job's tree is, with the Node compile cache kept between jobs (NODE_COMPILE_CACHE), as the agent
// keeps it. The runner is the compiled one (`npm run build` first). With --before DIR (an earlier
// tree with its own dist/), both runners take turns in one run, so both see the same load.
// Also printed: fork → ready, the spare's own load, which the agent pays before the job comes.
//   node bench/runner-hand-over.ts [--jobs N] [--before DIR] [--busy] [--profile DIR]
import { fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { RUNNER_WORKFLOWS, startMessage } from '../test/fixtures/run-runner.ts';
import { percentile, repoRoot, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20' },
    before: { type: 'string' },
    busy: { type: 'boolean', default: false },
    // V8 CPU profiles of the runners into this directory (which frames the hand-over spends on).
    profile: { type: 'string' },
  },
});
const JOBS = Math.max(1, Math.min(500, Number(values.jobs)));

interface Sample {
  ready: number;
  firstStep: number;
}

function runnerOf(root: string): string {
  const main = join(root, 'dist', 'agent', 'runner', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build in ${root} first`);
  return main;
}

/** Fork, wait for ready (and let it settle, as a spare waits), hand it one job, time to the first step. */
async function oneJob(main: string, cacheDir: string, work: string): Promise<Sample> {
  const jobDir = await mkdtemp(join(work, 'job-'));
  const workflowDir = join(jobDir, 'src', '.svc', 'workflows');
  await mkdir(workflowDir, { recursive: true });
  const file = join(workflowDir, 'steps.ts');
  await copyFile(join(RUNNER_WORKFLOWS, 'steps.ts'), file);
  const forked = performance.now();
  const execArgv = values.profile === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(values.profile)}`];
  const child = fork(main, [], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], execArgv, env: { ...process.env, NODE_COMPILE_CACHE: cacheDir } });
  child.stdout!.resume();
  child.stderr!.resume();
  let ready = 0;
  let handed = 0;
  const firstStep = await new Promise<number>((resolveStep, reject) => {
    child.on('message', (raw: unknown) => {
      const message = raw as { type: string; status?: string };
      if (message.type === 'runner.ready') {
        ready = performance.now() - forked;
        // A spare has long finished loading when its job comes.
        setTimeout(() => {
          handed = performance.now();
          child.send(startMessage({ file, workflowName: 'steps', jobName: 'three' }, jobDir));
        }, 200);
      }
      if (message.type === 'runner.step' && message.status === 'running' && handed > 0) resolveStep(performance.now() - handed);
      if (message.type === 'runner.result') reject(new Error(`the job ended before a step ran: ${JSON.stringify(raw).slice(0, 500)}`));
    });
    child.on('exit', (code) => reject(new Error(`runner exited (${code}) before a step ran`)));
  });
  // SIGTERM lets a profiled runner write its profile (the job is cancelled, then it exits).
  child.kill(values.profile === undefined ? 'SIGKILL' : 'SIGTERM');
  await new Promise((r) => child.once('exit', r).once('error', r));
  await rm(jobDir, { recursive: true, force: true });
  return { ready, firstStep };
}

async function main(): Promise<void> {
  const runners = [{ name: 'after', main: runnerOf(repoRoot) }];
  if (values.before !== undefined) runners.unshift({ name: 'before', main: runnerOf(resolve(values.before)) });
  const work = await mkdtemp(join(tmpdir(), 'svc-bench-hand-over-'));
  try {
    const samples = new Map<string, Sample[]>(runners.map((r) => [r.name, []]));
    const caches = new Map(runners.map((r) => [r.name, join(work, `compile-cache-${r.name}`)]));
    // One job each, not counted: the compile cache of the runner's own modules is written.
    for (const r of runners) await oneJob(r.main, caches.get(r.name)!, work);
    for (let i = 0; i < JOBS; i++) {
      for (const r of i % 2 === 0 ? runners : [...runners].reverse()) samples.get(r.name)!.push(await oneJob(r.main, caches.get(r.name)!, work));
    }
    process.stdout.write(`warm runner handed a job → first step running (${JOBS} jobs each, a new directory per job, compile cache kept), ms:\n`);
    const p50 = new Map<string, number>();
    for (const [name, list] of samples) {
      const first = list.map((s) => s.firstStep).sort((a, b) => a - b);
      const ready = list.map((s) => s.ready).sort((a, b) => a - b);
      p50.set(name, percentile(first, 50));
      process.stdout.write(`  ${name.padEnd(6)} first step p50 ${percentile(first, 50).toFixed(1)}  p90 ${percentile(first, 90).toFixed(1)}  max ${first.at(-1)!.toFixed(1)}   (fork → ready p50 ${percentile(ready, 50).toFixed(1)})\n`);
    }
    if (p50.has('before')) process.stdout.write(`  after is ${(p50.get('before')! / p50.get('after')!).toFixed(2)}x faster at p50\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await withMachine(values.busy, 600, main);
