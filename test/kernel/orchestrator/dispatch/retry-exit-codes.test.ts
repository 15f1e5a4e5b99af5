// Retry on exit codes (docs/run-states.md "Retries", `on: [{ exitCodes: [...] }]`) end to end:
// `svc-agent` as a real process (process sandbox, the real step runner) reports the exit code
// of the `ctx.$` command that failed a step, the REAL orchestrator (dispatch, scheduling, run
// control; real PostgreSQL) stores it and retries the job when the policy lists it. A workflow
// file compiled with workflowToLockEntry, checked out from a real git repository. Then an agent of
// wire protocol 4 (which never reports exit codes): such a job is not given to it, and fails at
// once naming it when it is the only agent carrying the job's labels.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { tempDir } from '../../../agent/fixtures/trees.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { MIN_PROGRAM_TIMEOUT_MS, REPO_ROOT, startProgram } from '../../../fixtures/programs.ts';
import { insertRun, jobRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { compiledWorkflowRepo, createTestRun, jobLogText, runOf, startSchedulingNode } from '../scheduling/harness.ts';
import { afterDispatchPass } from './harness.ts';

t.setTimeout(600_000);

// `flaky` exits 3 the first time (it leaves the marker), then passes; `broken` always exits 5,
// which its policy does not list. An hour's back-off, moved in the database below, so the test
// reads the waiting attempt's reason before the run-control worker releases it.
// The commands go to sh as argument arrays (never a shell string built here); `$0` is the marker.
const workflowText = (marker: string) =>
  [
    "import { job, push, workflow } from 'svc/sdk';",
    "const policy = { maxAttempts: 2, on: [{ exitCodes: [3, 75] }], backoff: { delaySeconds: 3600, factor: 1 } };",
    `const marker = ${JSON.stringify(marker)};`,
    "const onceThenPass = 'test -e \"$0\" && exit 0; : > \"$0\"; exit 3';",
    'export default workflow(\'ci\', {',
    '  on: push(),',
    '  jobs: {',
    '    flaky: job({ runsOn: \'linux\', retry: policy, steps: (s) => s.step(\'run\', async (ctx) => { await ctx.$`sh -c ${onceThenPass} ${marker}`; return {}; }) }),',
    '    broken: job({ runsOn: \'linux\', retry: policy, steps: (s) => s.step(\'run\', async (ctx) => { ctx.log.info(\'about to exit 5\'); await ctx.$`sh -c ${\'exit 5\'}`; return {}; }) }),',
    '  },',
    '});',
    '',
  ].join('\n');

interface Attempt { id: string; status: string; reason: string | null; attempt: number; retried_as: string | null; retry_cause: string | null; exit_code: number | null }

async function attempts(pool: DatabasePool, runId: string, name: string): Promise<Attempt[]> {
  return [...((await pool.any(sql.unsafe`
    SELECT id::text AS id, status, reason, attempt, retried_as::text AS retried_as, retry_cause, exit_code
    FROM jobs WHERE run_id = ${runId} AND name = ${name} ORDER BY attempt`)) as readonly Attempt[])];
}

t.test('a step exiting with a listed code is retried and passes; one exiting with another code is not retried', async (t) => {
  const tmp = await tempDir('svc-retry-exit-');
  t.teardown(tmp.cleanup);
  const marker = join(tmp.dir, 'flaky-ran-once');
  const { sha, entry, event } = await compiledWorkflowRepo(join(tmp.dir, 'repo'), workflowText(marker));
  t.same(entry.jobs.map((j) => j.retry?.exitCodes), [[3, 75], [3, 75]], 'the lock carries the exit codes');

  await eachDatabase(t, async (t, db) => {
    // Each flavour starts with `flaky` failing once again.
    await rm(marker, { force: true });
    const node = await startSchedulingNode(t, db.url);
    const agent = await startProgram(join(REPO_ROOT, 'bin/svc-agent.ts'), 'svc-agent', {
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        SVC_ORCHESTRATOR_URL: node.url,
        SVC_AGENT_ID: `exit-${db.kind}`,
        SVC_AGENT_LABELS: 'linux',
        SVC_AGENT_WORK_DIR: join(tmp.dir, `w-${db.kind}`),
        SVC_AGENT_SANDBOX: 'process',
        // The marker is outside the workspace, where bwrap would make it read-only.
        SVC_AGENT_BWRAP: 'never',
        SVC_AGENT_LOG_LEVEL: 'warn',
      },
      readyTimeoutMs: MIN_PROGRAM_TIMEOUT_MS,
    });
    t.teardown(() => agent.stop());
    const run = await createTestRun(db.pool, entry, { sha, event });

    const [one, two] = await until('flaky attempt 2 created', async () => {
      const rows = await attempts(db.pool, run.runId, 'flaky');
      return rows.length === 2 ? rows : undefined;
    }, 240_000, 100);
    t.match(one, { status: 'failed', attempt: 1, exit_code: 3, retried_as: two!.id }, 'attempt 1 failed with the exit code the agent reported');
    t.match(one!.reason, /^step "run" failed: /);
    t.match(two, { status: 'waiting', attempt: 2, retry_cause: 'exit-code', exit_code: null });
    t.match(two!.reason, /^Retry 2 of 2 \(exit code 3: step "run" failed: .*\): not before \d{4}-/);
    const step = (await db.pool.one(sql.unsafe`SELECT status, exit_code FROM job_steps WHERE job_id = ${one!.id} AND index = 0`)) as { status: string; exit_code: number | null };
    t.same(step, { status: 'failed', exit_code: 3 }, 'the failed step keeps its exit code');

    await db.pool.query(sql.unsafe`UPDATE jobs SET retry_at = now() - interval '1 second' WHERE id = ${two!.id}`);
    const done = await until('run finished', async () => {
      const r = await runOf(db.pool, run.runId);
      return ['completed', 'failed', 'cancelled', 'skipped'].includes(r.status) ? r : undefined;
    }, 240_000, 100);
    t.equal(done.status, 'failed', 'broken fails the run');

    const flaky = await attempts(db.pool, run.runId, 'flaky');
    t.same(flaky.map((a) => [a.attempt, a.status, a.exit_code]), [[1, 'failed', 3], [2, 'completed', null]], 'the second attempt of flaky passed');
    const broken = await attempts(db.pool, run.runId, 'broken');
    t.equal(broken.length, 1, 'exit code 5 is not in the list: no retry');
    t.match(broken[0], { status: 'failed', exit_code: 5, retried_as: null });
    t.match(await jobLogText(db.pool, broken[0]!.id), 'about to exit 5', 'the failed job keeps its log');
    t.ok((await jobLogText(db.pool, one!.id)).length > 0, 'the retried attempt keeps its log');
    const completions = (await db.pool.anyFirst(sql.unsafe`
      SELECT job_id::text FROM run_events WHERE run_id = ${run.runId} AND kind = 'job_complete' ORDER BY job_id`)) as readonly string[];
    t.same(completions, [flaky[1]!.id, broken[0]!.id].sort(), 'job_complete for the last attempt of each job only');
  });
});

t.test('agents of protocol 4 do not report exit codes: such a job goes to a protocol 5 agent, or fails naming them', async (t) => {
  const exitCodes = { retry: { maxAttempts: 2, agentLost: false, failedTests: false, exitCodes: [3], backoff: { delaySeconds: 0, factor: 1, maxDelaySeconds: 0 } } };
  await eachDatabase(t, async (t, db) => {
    const node = await startSchedulingNode(t, db.url);
    const old = await TestAgent.online({ url: node.url, agentId: 'old-4', labels: ['ci', 'legacy'], protocolVersion: 4 });
    const current = await TestAgent.online({ url: node.url, agentId: 'new-5', labels: ['ci'] });
    t.teardown(async () => {
      await old.close();
      await current.close();
    });

    const routed = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['ci'], lock: exitCodes }] });
    const id = routed.jobs['unit']!.id;
    await current.waitFor('job.dispatch', (m) => m.jobId === id);
    await afterDispatchPass(node, old, current);
    t.notOk(old.received.some((m) => m.type === 'job.dispatch'), 'the protocol 4 agent got nothing');
    current.jobStatus(id, 'running');
    current.jobStatus(id, 'failed', { reason: 'step "t" failed: exit 3', exitCode: 3 });
    const retried = await until('attempt 2', async () => (await attempts(db.pool, routed.runId, 'unit'))[1]);
    t.match(retried, { attempt: 2, retry_cause: 'exit-code' }, 'the protocol 5 agent\'s exit code retried it');

    const legacy = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['legacy'], lock: exitCodes }] });
    const failed = await until('the job failed', async () => {
      const job = await jobRow(db.pool, legacy.jobs['unit']!.id);
      return job.status === 'failed' ? job : undefined;
    });
    t.match(failed.reason, /^SVC_ERR_DISPATCH_AGENT_PROTOCOL_TOO_OLD: No agent can run this job: it uses retry\.exitCodes \(wire protocol 5\)/);
    t.match(failed.reason, 'agent old-4 speaks protocol 4, which does not carry retry.exitCodes', 'the agent, by name');
    t.match(failed.reason, "A retry on exit codes needs the agent to report the failing command's exit code, which agents below protocol 5 do not", 'and why it matters');
    t.equal(failed.agent_id, null, 'never dispatched');

    // Without exit codes in its policy a job still runs on the protocol 4 agent.
    const plain = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['legacy'], lock: { retry: { ...exitCodes.retry, agentLost: true, exitCodes: [] } } }] });
    const d = await old.waitFor('job.dispatch', (m) => m.jobId === plain.jobs['unit']!.id);
    old.jobStatus(d.jobId, 'completed');
  });
});
