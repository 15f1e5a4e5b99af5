// Run-level concurrency groups end to end with REAL processes (test/fixtures/jobs-stack.ts):
// svc-relay, svc-orchestrator, three svc-agent processes (an agent runs one job at a time, so
// three agents: only the group, never agent capacity, can serialize the runs), real PostgreSQL,
// a bare repository with the post-receive hook. Workflows compiled with `svc compile`, each on
// its own branch so a push starts exactly one of them:
//   - `free` (no concurrency): three pushes → their runs overlap (the control: shows the
//     ordering assertions below can fail);
//   - `serial` (`group: 'deploy', max: 1`): three pushes → one run at a time, in push order,
//     all completed;
//   - `latest` (`cancelInProgress: true`): pushes while a run is running → the older runs end
//     cancelled by svc:concurrency with the cancelInProgress reason, the newest completes;
//   - `keyed` (`group: (ctx) => 'g-' + ctx.event.branch`): the key the filter pseudo-job
//     evaluated on the agent is recorded in runs.concurrency_group.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { eachDatabase } from '../fixtures/db.ts';
import { startJobsStack, type JobsStack } from '../fixtures/jobs-stack.ts';
import { until } from '../fixtures/runs.ts';
import { sql } from '../../kernel/services/db/index.ts';

t.setTimeout(1_800_000);

/**
 * The `free` and `serial` work waits for a gate file named after its commit, which the test
 * creates: the test decides when each run's work ends, so overlap and ordering are shown by
 * states observed while the work is held, never by how long anything took. The directory is
 * outside /tmp, which the process sandbox replaces with an empty tmpfs; the host file system is
 * bound read-only into the sandbox, so a gate created later is seen.
 */
const gated = (gateDir: string) => `const gate = ${JSON.stringify(gateDir)} + '/' + String(ctx.event.sha);
        while (!existsSync(gate)) await new Promise((resolve) => setTimeout(resolve, 100));`;
const sleepFor = (ms: string) => `await new Promise((resolve) => setTimeout(resolve, ${ms}));`;

const worker = (name: string, branch: string, concurrency: string, wait: string) => `import { job, push, workflow } from 'svc/sdk';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
export default workflow('${name}', {
  on: push({ branches: ['${branch}'] }),
  ${concurrency}
  jobs: {
    work: job({
      runsOn: 'e2e',
      steps: (s) => s.step('work', async (ctx) => {
        const note = await readFile('notes.txt', 'utf8').catch(() => '');
        console.log('work start ' + String(ctx.event.sha ?? '').slice(0, 12));
        ${wait}
        console.log('work done ' + String(ctx.event.sha ?? '').slice(0, 12));
      }),
    }),
  },
});
`;

const workflows = (gateDir: string) => ({
  '.svc/workflows/free.ts': worker('free', 'free', '', gated(gateDir)),
  '.svc/workflows/serial.ts': worker('serial', 'serial', "concurrency: { group: 'deploy', max: 1 },", gated(gateDir)),
  // The runs a newer one cancels sleep far longer than the test lasts; the last push (its
  // notes.txt says "final") sleeps briefly.
  '.svc/workflows/latest.ts': worker('latest', 'latest', "concurrency: { group: 'latest-only', cancelInProgress: true },", sleepFor("note.includes('final') ? 1000 : 600000")),
  '.svc/workflows/keyed.ts': worker('keyed', 'keyed/*', "concurrency: { group: (ctx) => 'g-' + String(ctx.event.branch) },", sleepFor('10')),
});
const BRANCHES = ['free', 'serial', 'latest', 'keyed/one', 'keyed/two'];

interface RunTimes {
  id: string;
  sha: string;
  status: string;
  reason: string | null;
  cancelled_by: string | null;
  concurrency_group: string | null;
  concurrency_state: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

interface WorkJob {
  status: string;
  reason: string | null;
  agent_id: string | null;
  dispatched_at: number | null;
  started_at: number | null;
  finished_at: number | null;
}

async function runTimes(stack: JobsStack, sha: string, workflow: string): Promise<RunTimes | null> {
  return (await stack.pool.maybeOne(sql.unsafe`
    select id::text as id, sha, status, reason, cancelled_by, concurrency_group, concurrency_state,
           (extract(epoch from created_at) * 1000)::float8 as created_at, (extract(epoch from started_at) * 1000)::float8 as started_at,
           (extract(epoch from finished_at) * 1000)::float8 as finished_at
    from runs where sha = ${sha} and workflow = ${workflow} and parent_run_id is null`)) as RunTimes | null;
}

async function workJob(stack: JobsStack, runId: string): Promise<WorkJob> {
  return (await stack.pool.one(sql.unsafe`
    select status, reason, agent_id, (extract(epoch from dispatched_at) * 1000)::float8 as dispatched_at,
           (extract(epoch from started_at) * 1000)::float8 as started_at, (extract(epoch from finished_at) * 1000)::float8 as finished_at
    from jobs where run_id = ${runId} and name = 'work'`)) as unknown as WorkJob;
}

async function logText(stack: JobsStack, runId: string): Promise<string> {
  const rows = (await stack.pool.any(sql.unsafe`
    select l.lines from job_logs l join jobs j on j.id = l.job_id where j.run_id = ${runId} and j.name = 'work' order by l.seq`)) as unknown as Array<{ lines: Array<{ text: string }> }>;
  return rows.flatMap((r) => r.lines.map((l) => l.text)).join('\n');
}

/** A commit (no workflow change) pushed to `branch`; the hook must have delivered it. */
async function pushTo(stack: JobsStack, branch: string, note: string): Promise<string> {
  const sha = await stack.remote.commit({ 'notes.txt': `${branch} ${note}\n` }, `${branch}: ${note}`);
  const pushed = await stack.remote.push(`HEAD:refs/heads/${branch}`);
  if (/NOT delivered/.test(pushed.stderr)) throw new Error(`the hook did not deliver the push to ${branch}: ${pushed.stderr}`);
  return sha;
}

/** The jobs of the run of `workflow` at `sha`, one line each (for a failure message). */
async function jobsDump(stack: JobsStack, sha: string, workflow: string): Promise<string> {
  const rows = (await stack.pool.any(sql.unsafe`
    select j.name, j.kind, j.status, j.reason, j.agent_id, j.waits_for_build, r.status as run_status, r.concurrency_state
    from jobs j join runs r on r.id = j.run_id where r.sha = ${sha} and r.workflow = ${workflow} order by j.created_at`)) as unknown as Array<Record<string, unknown>>;
  return rows.map((r) => JSON.stringify(r)).join('\n');
}

/** The run of `workflow` at `sha` once it is terminal. */
async function terminalRun(stack: JobsStack, sha: string, workflow: string, timeoutMs = 240_000): Promise<RunTimes> {
  try {
    return await until(`the ${workflow} run of ${sha.slice(0, 8)} to end`, async () => {
      const run = await runTimes(stack, sha, workflow);
      return run !== null && ['completed', 'failed', 'cancelled', 'skipped'].includes(run.status) ? run : undefined;
    }, timeoutMs, 200);
  } catch (error) {
    throw new Error(`${(error as Error).message}; its jobs:\n${await jobsDump(stack, sha, workflow)}`);
  }
}

/**
 * Once the run of `sha` exists, waits until no build job is pending anywhere: later runs of the
 * workflow then find the source cached instead of coalescing on the build. (These tests are
 * about concurrency groups; build coalescing has its own tests.)
 */
async function buildSettled(stack: JobsStack, sha: string, workflow: string): Promise<void> {
  await until(`the ${workflow} run of ${sha.slice(0, 8)}`, async () => ((await runTimes(stack, sha, workflow)) === null ? undefined : true), 120_000, 100);
  await until('no pending build job', async () => {
    const pending = (await stack.pool.oneFirst(sql.unsafe`
      select count(*)::int from jobs where kind = 'build' and build_key is not null and status in ('waiting', 'queued', 'dispatched', 'running', 'recovering')`)) as number;
    return pending === 0 ? true : undefined;
  }, 180_000, 100);
}

/** Three pushes to `branch`; the later two once the first run's build (if any) is done. */
async function pushThree(stack: JobsStack, branch: string, workflow: string): Promise<string[]> {
  const shas = [await pushTo(stack, branch, 'push 1')];
  await buildSettled(stack, shas[0]!, workflow);
  for (const n of [2, 3]) shas.push(await pushTo(stack, branch, `push ${n}`));
  return shas;
}

const describe = (runs: RunTimes[], jobs: WorkJob[]): string =>
  runs
    .map((r, i) => `run ${i + 1} ${r.status} ${r.reason ?? ''} created=${r.created_at} started=${r.started_at} finished=${r.finished_at}` +
      ` | work ${jobs[i]?.status} dispatched=${jobs[i]?.dispatched_at} started=${jobs[i]?.started_at} finished=${jobs[i]?.finished_at} on ${jobs[i]?.agent_id}`)
    .join('\n');


await eachDatabase(t, async (t, db) => {
  const stack = await startJobsStack(t, db);
  const gateDir = await mkdtemp(join('/var/tmp', 'svc-e2e-gates-'));
  t.teardown(() => rm(gateDir, { recursive: true, force: true }));
  const release = (sha: string) => writeFile(join(gateDir, sha), '');
  // Every branch exists before any workflow does: later pushes are plain fast-forward updates.
  await stack.remote.commit({ 'README.md': 'concurrency e2e\n' }, 'init');
  for (const branch of ['main', ...BRANCHES]) await stack.remote.push(`HEAD:refs/heads/${branch}`);
  // The workflows only run on their own branches: this push to main starts none of them.
  await stack.pushWorkflow(workflows(gateDir), 'add workflows');
  for (const n of [1, 2, 3]) await stack.startAgent({ SVC_AGENT_ID: `conc-agent-${n}` });

  await t.test('control: without a group, three pushes of the same workflow overlap', async (t) => {
    const shas = await pushThree(stack, 'free', 'free');
    // All three works hold at their gates at once: nothing serialized them.
    await until('the work of all three free runs running at once', async () => {
      const runs = await Promise.all(shas.map((sha) => runTimes(stack, sha, 'free')));
      if (runs.some((r) => r === null)) return undefined;
      const works = await Promise.all(runs.map((r) => workJob(stack, r!.id)));
      return works.every((w) => w.status === 'running') ? true : undefined;
    }, 240_000, 200);
    for (const sha of shas) await release(sha);
    const runs = await Promise.all(shas.map((sha) => terminalRun(stack, sha, 'free')));
    const jobs = await Promise.all(runs.map((r) => workJob(stack, r.id)));
    const summary = describe(runs, jobs);
    for (const [i, r] of runs.entries()) t.equal(r.status, 'completed', `run ${i + 1} completed`, { summary });
    for (const r of runs) t.equal(r.concurrency_state, null, 'no concurrency group: never waits for admission');
    // Each run's work started before the previous one's finished: the runs overlapped.
    for (const i of [1, 2]) {
      t.ok(jobs[i]!.started_at! < jobs[i - 1]!.finished_at!, `work of run ${i + 1} started before work of run ${i} finished`, { summary });
      t.ok(runs[i]!.started_at! < runs[i - 1]!.finished_at!, `run ${i + 1} started before run ${i} finished (runs)`, { summary });
    }
  });

  await t.test("group 'deploy', max 1: three pushes run one at a time, in push order", async (t) => {
    const shas = await pushThree(stack, 'serial', 'serial');
    const statusWhileWaiting = new Set<string>();
    // Run k's work holds at its gate; the later runs wait for admission and their work is not
    // dispatched. Then run k's gate opens and run k+1 is admitted.
    for (const k of [0, 1, 2]) {
      await until(`serial run ${k + 1} running its work while the later runs wait for admission`, async () => {
        const runs = await Promise.all(shas.map((sha) => runTimes(stack, sha, 'serial')));
        if (runs.some((r) => r === null)) return undefined;
        const later = runs.slice(k + 1);
        for (const r of later) if (r!.concurrency_state === 'waiting') statusWhileWaiting.add(r!.status);
        if (runs[k]!.concurrency_state !== 'admitted' || later.some((r) => r!.concurrency_state !== 'waiting')) return undefined;
        return (await workJob(stack, runs[k]!.id)).status === 'running' ? runs : undefined;
      }, 240_000, 100);
      for (const sha of shas.slice(k + 1)) {
        const run = (await runTimes(stack, sha, 'serial'))!;
        const work = (await stack.pool.maybeOne(sql.unsafe`select dispatched_at from jobs where run_id = ${run.id} and name = 'work'`)) as { dispatched_at: unknown } | null;
        t.equal(work?.dispatched_at ?? null, null, `while run ${k + 1} holds the group, the work of a later run is not dispatched`);
      }
      await release(shas[k]!);
    }
    const runs = await Promise.all(shas.map((sha) => terminalRun(stack, sha, 'serial')));
    const jobs = await Promise.all(runs.map((r) => workJob(stack, r.id)));
    const summary = describe(runs, jobs);
    for (const [i, r] of runs.entries()) t.equal(r.status, 'completed', `run ${i + 1} completed`, { summary });
    for (const r of runs) t.equal(r.concurrency_group, 'deploy', 'the string group is the key');
    for (const r of runs) t.equal(r.concurrency_state, 'admitted', 'admitted in the end');
    for (const i of [1, 2]) {
      t.ok(runs[i]!.created_at < runs[i - 1]!.finished_at!, `run ${i + 1} existed before run ${i} finished (it had to wait)`, { summary });
      // The grouped work starts only once the previous run has ended: admission in push order.
      t.ok(jobs[i]!.dispatched_at! >= runs[i - 1]!.finished_at!, `work of run ${i + 1} dispatched after run ${i} finished (runs.finished_at)`, { summary });
      t.ok(jobs[i]!.started_at! >= runs[i - 1]!.finished_at!, `work of run ${i + 1} started after run ${i} finished`, { summary });
      t.ok(runs[i]!.started_at! >= runs[i - 1]!.finished_at!, `run ${i + 1} started (runs.started_at) after run ${i} finished (runs.finished_at)`, { summary });
    }
    t.comment(`runs.status seen on a run waiting for admission: ${[...statusWhileWaiting].join(', ')}`);
    t.same([...statusWhileWaiting], ['queued'], 'a run waiting for admission is queued (docs/run-states.md)');
  });

  await t.test('cancelInProgress: pushes while a run runs cancel the older runs; the newest completes', async (t) => {
    const sha1 = await pushTo(stack, 'latest', 'push 1');
    await until('run 1 of latest to be running its work', async () => {
      const run = await runTimes(stack, sha1, 'latest');
      if (run === null) return undefined;
      return (await workJob(stack, run.id)).status === 'running' ? true : undefined;
    }, 180_000, 100);
    const sha2 = await pushTo(stack, 'latest', 'push 2');
    const sha3 = await pushTo(stack, 'latest', 'push 3 final');
    const runs = [await terminalRun(stack, sha1, 'latest'), await terminalRun(stack, sha2, 'latest'), await terminalRun(stack, sha3, 'latest')];
    const jobs = await Promise.all(runs.map((r) => workJob(stack, r.id)));
    const summary = describe(runs, jobs);
    const newer = new RegExp(`^Cancelled: a newer run \\((${runs[1]!.id}|${runs[2]!.id})\\) in concurrency group latest-only \\(cancelInProgress\\)$`);
    for (const i of [0, 1]) {
      t.equal(runs[i]!.status, 'cancelled', `run ${i + 1} cancelled`, { summary });
      t.equal(runs[i]!.cancelled_by, 'svc:concurrency', `run ${i + 1} cancelled by svc:concurrency`);
      t.match(runs[i]!.reason, newer, `run ${i + 1}: the reason names a newer run, the group and cancelInProgress`);
    }
    t.match(runs[1]!.reason, new RegExp(`\\(${runs[2]!.id}\\)`), 'run 2 was cancelled by run 3');
    t.equal(jobs[0]!.status, 'cancelled', 'the running work of run 1 was cancelled', { summary });
    t.notMatch(await logText(stack, runs[0]!.id), /work done/, 'run 1 never finished its work');
    t.equal(runs[2]!.status, 'completed', 'the newest run completed', { summary });
    t.equal(runs[2]!.cancelled_by, null);
    t.match(await logText(stack, runs[2]!.id), new RegExp(`work done ${sha3.slice(0, 12)}`), 'the newest run did its work');
    t.ok(jobs[2]!.dispatched_at! >= runs[0]!.finished_at!, "the newest run's work was dispatched once run 1 had ended", { summary });
    t.ok(jobs[2]!.dispatched_at! >= runs[1]!.finished_at!, "the newest run's work was dispatched once run 2 had ended", { summary });
  });

  await t.test('a function group: runs.concurrency_group holds the key evaluated on the agent', async (t) => {
    const one = await pushTo(stack, 'keyed/one', 'keyed one');
    await buildSettled(stack, one, 'keyed');
    const two = await pushTo(stack, 'keyed/two', 'keyed two');
    const runs = [await terminalRun(stack, one, 'keyed'), await terminalRun(stack, two, 'keyed')];
    const jobs = await Promise.all(runs.map((r) => workJob(stack, r.id)));
    const summary = describe(runs, jobs);
    for (const [i, r] of runs.entries()) t.equal(r.status, 'completed', `run ${i + 1} completed`, { summary });
    t.equal(runs[0]!.concurrency_group, 'g-keyed/one', 'the key evaluated for branch keyed/one');
    t.equal(runs[1]!.concurrency_group, 'g-keyed/two', 'the key evaluated for branch keyed/two');
    for (const r of runs) {
      const filters = (await stack.pool.anyFirst(sql.unsafe`select status from jobs where run_id = ${r.id} and kind = 'filter'`)) as readonly string[];
      t.same(filters, ['completed'], 'the filter pseudo-job evaluated it');
    }
  });
});
