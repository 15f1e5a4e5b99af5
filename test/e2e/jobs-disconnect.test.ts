// Agent loss mid-job with REAL processes (test/fixtures/jobs-stack.ts), spec "Queued job when
// its agent disconnects", with the spec's recovery window (twice the default 60 s reconnect
// delay: a restarted agent process is back well inside it even on a machine whose cores are busy):
//   1. a static agent SIGKILLed mid-step and restarted with the same id (and work dir) inside
//      the window → the job is re-attached, not re-dispatched (attempts 1), and completes (the
//      step has a check, so the resumed job runs it again: docs/agent.md "When an agent restarts
//      mid-job"; a step without one fails instead, test/agent/resume.test.ts);
//   2. killed again and not restarted → still recovering after two sweeps of the stale detector
//      (counted on the orchestrator's metrics); its window is then moved an hour back in the
//      database, not waited out, and the job fails: the agent did not reconnect within the
//      recovery window;
//   3. an ephemeral agent killed mid-job → the job fails at once.
// It ends with the fault suite's counted line (docs/faults.md): answered = jobs whose agent was
// killed mid-step, recorded = those that ended as the spec's table says, duplicates = jobs
// dispatched more than once (attempts above 1, or a second job row), lost = jobs left unfinished.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase, type Test } from '../fixtures/db.ts';
import { startJobsStack, TERMINAL, type JobsStack } from '../fixtures/jobs-stack.ts';
import { morePasses, RECOVERY_SWEEPS } from '../fixtures/passes.ts';
import { until } from '../fixtures/runs.ts';

t.setTimeout(1_200_000);

/** The spec's window: twice the default maximum reconnect delay (agent.maxReconnectDelayMs 60 s). */
const WINDOW_MS = 120_000;

/**
 * The step naps until the test creates a gate file named after its commit: the test, not a
 * timer, decides how long the job stays mid-step. The directory is outside /tmp, which the
 * process sandbox replaces with an empty tmpfs; the host file system is bound read-only into it.
 * The check (always "drift") is what lets a resumed job run the interrupted step again.
 */
const workflow = (gateDir: string) => `import { job, push, workflow } from 'svc/sdk';
import { existsSync } from 'node:fs';
export default workflow('slow', {
  on: push({ branches: ['main'] }),
  jobs: {
    sleepy: job({
      runsOn: 'e2e',
      steps: (s) => s.step('nap', async (ctx) => {
        console.log('NAP start');
        const gate = ${JSON.stringify(gateDir)} + '/' + String(ctx.event.sha);
        while (!existsSync(gate)) await new Promise((resolve) => setTimeout(resolve, 100));
        console.log('NAP done');
      }, { check: () => ({ drift: true }) }),
    }),
  },
});
`;

interface Job {
  id: string;
  status: string;
  reason: string | null;
  attempts: number;
  agent_id: string | null;
}

async function sleepyOf(stack: JobsStack, sha: string): Promise<Job> {
  const run = await stack.runOf(sha);
  return until('the sleepy job', async () => {
    const row = (await stack.pool.maybeOne(sql.unsafe`select id::text as id, status, reason, attempts, agent_id from jobs where run_id = ${run.id} and name = 'sleepy'`)) as Job | null;
    return row ?? undefined;
  }, 60_000, 100);
}

async function jobNow(stack: JobsStack, id: string): Promise<Job> {
  return (await stack.pool.one(sql.unsafe`select id::text as id, status, reason, attempts, agent_id from jobs where id = ${id}`)) as Job;
}

/** Waits until the job's `nap` step is running on an agent. */
async function napping(stack: JobsStack, id: string): Promise<void> {
  await until('the nap step to run', async () => {
    const row = await stack.pool.maybeOne(sql.unsafe`select 1 as one from job_steps s join jobs j on j.id = s.job_id
      where s.job_id = ${id} and s.name = 'nap' and s.status = 'running' and j.status = 'running'`);
    return row === null ? undefined : true;
  }, 90_000, 50);
}

async function statusBecomes(stack: JobsStack, id: string, statuses: string[], timeoutMs: number): Promise<Job> {
  return until(`job ${id} to become ${statuses.join('/')}`, async () => {
    const row = await jobNow(stack, id);
    return statuses.includes(row.status) ? row : undefined;
  }, timeoutMs, 50);
}

/** A job whose agent was SIGKILLed mid-step, and the status the spec's table gives it. */
interface Killed {
  id: string;
  expected: 'completed' | 'failed';
}

/** The fault suite's line: every killed job ended as the table says, none dispatched twice, none left unfinished. */
async function countKilled(t: Test, stack: JobsStack, killed: readonly Killed[]): Promise<void> {
  const rows = (await stack.pool.any(sql.unsafe`
    select j.id::text as id, j.status, j.attempts, (select count(*)::int from jobs o where o.run_id = j.run_id and o.name = j.name) as rows
    from jobs j where j.id = any(${sql.array(killed.map((k) => k.id), 'uuid')})`)) as readonly { id: string; status: string; attempts: number; rows: number }[];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const recorded = killed.filter((k) => byId.get(k.id)?.status === k.expected).length;
  const lost = killed.filter((k) => !TERMINAL.includes(byId.get(k.id)?.status ?? '')).length;
  const duplicates = rows.reduce((n, r) => n + Math.max(0, r.attempts - 1) + (r.rows - 1), 0);
  const completed = rows.filter((r) => r.status === 'completed').length;
  const failed = rows.filter((r) => r.status === 'failed').length;
  t.comment(`answered=${killed.length} recorded=${recorded} duplicates=${duplicates} lost=${lost} completed=${completed} failed=${failed}`);
  t.equal(recorded, killed.length, 'every killed job ended as the spec table says');
  t.equal(duplicates, 0, 'no job dispatched twice');
  t.equal(lost, 0, 'no job left unfinished');
}

await eachDatabase(t, async (t, db) => {
  // The stale detector looks five times a second (staleDetector.scanIntervalMs, an operator
  // setting), so counting two of its passes takes moments; the window itself is the default.
  const stack = await startJobsStack(t, db, { orchestratorEnv: { SVC_STALE_DETECTOR_SCAN_INTERVAL_MS: '200' } });
  const gateDir = await mkdtemp(join('/var/tmp', 'svc-e2e-naps-'));
  t.teardown(() => rm(gateDir, { recursive: true, force: true }));
  const release = (sha: string) => writeFile(join(gateDir, sha), '');
  const WORKFLOW = workflow(gateDir);
  const workDir = join(stack.root, 'static-agent');
  const staticEnv = { SVC_AGENT_ID: 'e2e-static', SVC_AGENT_WORK_DIR: workDir };
  const killed: Killed[] = [];

  await t.test('static agent killed mid-job and restarted within the window: the job completes, not re-dispatched', async (t) => {
    let agent = await stack.startAgent(staticEnv);
    const sha = await stack.pushWorkflow({ '.svc/workflows/slow.ts': WORKFLOW, 'README.md': 'one\n' }, 'slow');
    const job = await sleepyOf(stack, sha);
    await napping(stack, job.id);
    agent.child.kill('SIGKILL');
    await agent.stop();
    killed.push({ id: job.id, expected: 'completed' });
    const recovering = await statusBecomes(stack, job.id, ['recovering'], 60_000);
    t.equal(recovering.agent_id, 'e2e-static', 'recovering, still owned by the agent');
    agent = await stack.startAgent(staticEnv);
    await release(sha);
    const run = await stack.waitForRun(sha, 300_000);
    const done = await jobNow(stack, job.id);
    t.equal(done.status, 'completed', done.reason ?? '');
    t.equal(run.status, 'completed');
    t.equal(done.attempts, 1, 'nothing re-dispatched');
    t.equal(done.agent_id, 'e2e-static');
    const logs = (await stack.pool.any(sql.unsafe`select seq, lines from job_logs where job_id = ${job.id} order by seq`)) as readonly { seq: number; lines: Array<{ text: string }> }[];
    const text = logs.flatMap((l) => l.lines.map((x) => x.text)).join('\n');
    t.match(text, /NAP start[^]*NAP done/, 'the resumed run’s lines are stored (its seqs start above the old process’s)');

    await t.test('killed again and not restarted: the job fails after the recovery window', async (t) => {
      const sha2 = await stack.pushWorkflow({ 'README.md': 'two\n' }, 'second');
      const job2 = await sleepyOf(stack, sha2);
      await napping(stack, job2.id);
      const killedAt = Date.now();
      agent.child.kill('SIGKILL');
      await agent.stop();
      killed.push({ id: job2.id, expected: 'failed' });
      await statusBecomes(stack, job2.id, ['recovering'], 60_000);
      // The window the orchestrator set at the disconnect: the kill, at the earliest, plus the
      // window; at the latest, now plus the window (the disconnect was before now). Both in the
      // database's clock but the first (5 ms for its microseconds against this millisecond clock).
      const window = (await stack.pool.one(sql.unsafe`
        select extract(epoch from recovery_deadline) * 1000 as deadline, recovery_deadline <= now() + ${WINDOW_MS} * interval '1 millisecond' as within
        from jobs where id = ${job2.id}`)) as { deadline: number; within: boolean };
      t.ok(Number(window.deadline) - killedAt >= WINDOW_MS - 5, 'its recovery deadline is the window after the kill, not sooner');
      t.ok(window.within, 'and no later than the window after the disconnect');
      // Not before its time: two whole sweeps of the stale detector ran after it was seen recovering.
      await morePasses(stack.orchUrl, RECOVERY_SWEEPS);
      t.equal((await jobNow(stack, job2.id)).status, 'recovering', 'still recovering inside its window');
      // Its window passes: the deadline is moved an hour back (the window's length stays 120 s).
      await stack.pool.query(sql.unsafe`UPDATE jobs SET recovery_deadline = recovery_deadline - interval '1 hour' WHERE id = ${job2.id} AND status = 'recovering'`);
      const failed = await statusBecomes(stack, job2.id, ['failed', 'completed'], 300_000);
      t.equal(failed.status, 'failed');
      t.equal(failed.reason, 'Agent e2e-static did not reconnect within the recovery window (120s)');
      t.equal(failed.attempts, 1, 'not re-dispatched to another agent');
      t.equal((await stack.waitForRun(sha2, 300_000)).status, 'failed');
    });
  });

  await t.test('ephemeral agent killed mid-job: the job fails at once', async (t) => {
    const agent = await stack.startAgent({ SVC_AGENT_ID: 'e2e-ephemeral', SVC_AGENT_EPHEMERAL: 'true' });
    const sha = await stack.pushWorkflow({ 'README.md': 'three\n' }, 'third');
    const job = await sleepyOf(stack, sha);
    await napping(stack, job.id);
    const killedAt = Date.now();
    agent.child.kill('SIGKILL');
    await agent.stop();
    killed.push({ id: job.id, expected: 'failed' });
    // The first of these statuses it reaches is failed: it never went through recovering.
    const failed = await statusBecomes(stack, job.id, ['failed', 'recovering', 'completed'], 60_000);
    t.equal(failed.status, 'failed', 'no recovery window for an ephemeral agent');
    t.equal(failed.reason, 'Agent e2e-ephemeral (ephemeral) disconnected while the job was running');
    t.comment(`failed ${Date.now() - killedAt} ms after the kill`);
  });

  await t.test('counted', (t) => countKilled(t, stack, killed));
});
