// Job retries (docs/run-states.md "Retries") on the real orchestrator (dispatch and run control,
// real PostgreSQL) with agents speaking the real protocol: a lost agent fails the attempt as the
// spec says and, when the job's policy lists `agent-lost`, a new attempt (a new jobs row) waits
// out its back-off (moved in the database, not waited), is dispatched again and its dependents
// follow it; the failed attempt keeps its logs. A failure the policy does not list, and the last
// allowed attempt, fail the job for good.
import t from 'tap';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { runControlPass } from '../../../../kernel/orchestrator/run-control/worker.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { insertRun, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { createRunControlSubsystem } from '../../../../kernel/orchestrator/run-control/subsystem.ts';
import { testResultsSubsystem } from '../../../../kernel/orchestrator/test-results/subsystem.ts';
import type { Test } from '../../../fixtures/db.ts';
import { FAST, startNode } from './harness.ts';

/** Dispatch, run control and test results (`tests.report.request`), as a node runs them. */
async function startTestsNode(t: Test, dbUrl: string): Promise<{ url: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-retry-tests-'));
  const orch = await startOrchestrator({
    env: { SVC_DATABASE_URL: dbUrl, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'a'.repeat(64), SVC_AGENT_AUTH: 'none' },
    cwd: dataDir,
    logger: testLogger,
    plugins: () => ({ builtIns: [], config: {}, selection: {} }),
    subsystems: [createDispatchSubsystem(FAST), createRunControlSubsystem(), testResultsSubsystem],
  });
  t.teardown(async () => {
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { url: orch.url };
}

interface Attempt { id: string; display_name: string; status: string; reason: string | null; attempt: number; first_attempt_id: string | null; retried_as: string | null; retry_cause: string | null; retry_at: number | null }

async function attempts(pool: DatabasePool, runId: string, name: string): Promise<Attempt[]> {
  return [...((await pool.any(sql.unsafe`
    SELECT id::text AS id, display_name, status, reason, attempt, first_attempt_id::text AS first_attempt_id, retried_as::text AS retried_as, retry_cause, retry_at
    FROM jobs WHERE run_id = ${runId} AND name = ${name} ORDER BY attempt`)) as readonly Attempt[])];
}

const policy = (maxAttempts: number) => ({ retry: { maxAttempts, agentLost: true, failedTests: false, exitCodes: [], backoff: { delaySeconds: 3600, factor: 2, maxDelaySeconds: 7200 } } });

t.test('agent lost: a new attempt after the back-off; dependents follow it; the lost attempt keeps its logs', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const lost = await TestAgent.online({ url: node.url, agentId: 'eph-1', labels: ['x'], ephemeral: true });
    const { runId, jobs } = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['x'], lock: policy(3) }, { name: 'report', runsOn: ['x'], needs: ['unit'] }] });
    const first = await lost.waitFor('job.dispatch');
    t.equal(first.jobId, jobs['unit']!.id);
    lost.jobStatus(first.jobId, 'running');
    lost.sendRaw({ type: 'log.chunk', jobId: first.jobId, seq: 0, lines: [{ step: 'main', stream: 'stdout', text: 'attempt one was here', at: new Date().toISOString() }] });
    await until('attempt 1 running with its log', async () => {
      const rows = (await db.pool.anyFirst(sql.unsafe`SELECT j.status FROM jobs j JOIN job_logs l ON l.job_id = j.id WHERE j.id = ${first.jobId}`)) as readonly string[];
      return rows[0] === 'running' ? true : undefined;
    });
    await lost.drop();

    const [one, two] = await until('attempt 2 created', async () => {
      const rows = await attempts(db.pool, runId, 'unit');
      return rows.length === 2 ? rows : undefined;
    });
    t.equal(one!.status, 'failed', 'the lost attempt failed, as the spec says of a started job on a lost ephemeral agent');
    t.equal(one!.reason, 'Agent eph-1 (ephemeral) disconnected while the job was running');
    t.equal(one!.retried_as, two!.id);
    t.match(two, { status: 'waiting', attempt: 2, first_attempt_id: one!.id, retry_cause: 'agent-lost', display_name: 'unit (attempt 2)' });
    t.match(two!.reason, /^Retry 2 of 3 \(agent lost: Agent eph-1 \(ephemeral\) disconnected while the job was running\): not before \d{4}-/);
    t.ok(two!.retry_at !== null && two!.retry_at > Date.now() + 3_500_000, 'back-off of the policy: one hour');
    t.equal((await runRow(db.pool, runId)).status, 'running', 'the run goes on');
    const facts = (await db.pool.anyFirst(sql.unsafe`SELECT job_id::text FROM run_events WHERE run_id = ${runId} AND kind = 'job_complete'`)) as readonly string[];
    t.same(facts, [], 'a retried attempt records no job_complete');

    // Inside the back-off a run-control pass queues nothing and no agent gets the job.
    const next = await TestAgent.online({ url: node.url, agentId: 'eph-2', labels: ['x'], ephemeral: true });
    const pass = await runControlPass(db.pool, testLogger);
    t.equal(pass.queued, 0, 'nothing queued inside the back-off');
    await next.roundTrip();
    t.same(next.all('job.dispatch'), [], 'nothing dispatched inside the back-off');
    t.equal((await attempts(db.pool, runId, 'unit'))[1]!.status, 'waiting');

    await db.pool.query(sql.unsafe`UPDATE jobs SET retry_at = now() - interval '1 second' WHERE id = ${two!.id}`);
    const second = await next.waitFor('job.dispatch');
    t.equal(second.jobId, two!.id, 'attempt 2 dispatched once the back-off is over');
    next.jobStatus(second.jobId, 'running');
    next.jobStatus(second.jobId, 'completed', { outputs: { ok: true } });
    const third = await TestAgent.online({ url: node.url, agentId: 'eph-3', labels: ['x'], ephemeral: true });
    const report = await third.waitFor('job.dispatch');
    t.equal(report.jobId, jobs['report']!.id, 'the dependent runs after the successful attempt');
    t.same(report.jobConfig.needs, { unit: { ok: true } }, 'the dependent reads the outputs of the last attempt');
    third.jobStatus(report.jobId, 'running');
    third.jobStatus(report.jobId, 'completed');
    const done = await until('run completed', async () => {
      const run = await runRow(db.pool, runId);
      return run.status === 'completed' || run.status === 'failed' ? run : undefined;
    });
    t.equal(done.status, 'completed', done.reason ?? '');
    const logs = (await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM job_logs WHERE job_id = ${one!.id}`)) as number;
    t.equal(logs, 1, 'the failed attempt keeps its log');
    const completions = (await db.pool.anyFirst(sql.unsafe`
      SELECT job_id::text FROM run_events WHERE run_id = ${runId} AND kind = 'job_complete' ORDER BY id`)) as readonly string[];
    t.same(completions, [two!.id, jobs['report']!.id], 'job_complete for the last attempt and the dependent only');
    await Promise.all([next.close(), third.close()]);
  });
});

t.test('a failure the policy does not list, and the last attempt, fail the job for good', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url);
    const agent = await TestAgent.online({ url: node.url, agentId: 'static-1', labels: ['y'] });
    const plain = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['y'], lock: policy(3) }] });
    const d = await agent.waitFor('job.dispatch', (m) => m.jobId === plain.jobs['unit']!.id);
    agent.jobStatus(d.jobId, 'running');
    agent.jobStatus(d.jobId, 'failed', { reason: 'step "t" failed: assertion' });
    const failed = await until('run failed', async () => ((await runRow(db.pool, plain.runId)).status === 'failed' ? true : undefined));
    t.ok(failed);
    const rows = await attempts(db.pool, plain.runId, 'unit');
    t.equal(rows.length, 1, 'a plain step failure is not agent loss: no retry');
    t.equal(rows[0]!.retried_as, null);

    const last = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['z'], lock: policy(2) }] });
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      const lost = await TestAgent.online({ url: node.url, agentId: `z-${attempt}`, labels: ['z'], ephemeral: true });
      const job = await lost.waitFor('job.dispatch');
      lost.jobStatus(job.jobId, 'running');
      await until(`attempt ${attempt} running`, async () => ((await attempts(db.pool, last.runId, 'unit'))[attempt - 1]?.status === 'running' ? true : undefined));
      await lost.drop();
      if (attempt === 1) {
        const two = await until('attempt 2', async () => (await attempts(db.pool, last.runId, 'unit'))[1]);
        await db.pool.query(sql.unsafe`UPDATE jobs SET retry_at = now() - interval '1 second' WHERE id = ${two.id}`);
      }
    }
    const run = await until('run failed', async () => {
      const r = await runRow(db.pool, last.runId);
      return r.status === 'failed' ? r : undefined;
    });
    t.equal(run.reason, 'job failed: unit');
    const rows2 = await attempts(db.pool, last.runId, 'unit');
    t.same(rows2.map((r) => [r.attempt, r.status, r.retried_as === null]), [[1, 'failed', false], [2, 'failed', true]], 'maxAttempts 2: the second loss is final');
    const facts = (await db.pool.anyFirst(sql.unsafe`SELECT job_id::text FROM run_events WHERE run_id = ${last.runId} AND kind = 'job_complete'`)) as readonly string[];
    t.same(facts, [rows2[1]!.id], 'the final attempt records the failure');
    await agent.close();
  });
});

t.test('failed tests: an attempt that failed only because of its tests is retried; one that failed otherwise is not', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startTestsNode(t, db.url);
    const agent = await TestAgent.online({ url: node.url, agentId: 'tests-1', labels: ['t'] });
    // An hour's back-off, moved in the database below: with none, the worker could release the
    // attempt (and clear its waiting reason) before the test reads it.
    const failedTests = { retry: { maxAttempts: 2, agentLost: false, failedTests: true, exitCodes: [], backoff: { delaySeconds: 3600, factor: 1, maxDelaySeconds: 3600 } } };
    const { runId, jobs } = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['t'], lock: failedTests }] });
    const report = async (jobId: string, requestId: string, status: 'passed' | 'failed', exitFailure: boolean) => {
      agent.sendRaw({
        type: 'tests.report.request', jobId, requestId, step: { index: 0, name: 'test' }, final: true, exitFailure,
        results: [{ suite: 'math', name: 'adds', status, ...(status === 'failed' ? { message: 'expected 3, got 4' } : {}) }],
      });
      const answer = await until(`tests.report.response ${requestId}`, () => agent.received.find((m) => (m as { requestId?: string }).requestId === requestId), 20_000);
      t.notOk((answer as { error?: unknown }).error, 'the results were recorded');
    };

    const first = await agent.waitFor('job.dispatch', (m) => m.jobId === jobs['unit']!.id);
    agent.jobStatus(first.jobId, 'running');
    await report(first.jobId, 'r1', 'failed', true);
    agent.jobStatus(first.jobId, 'failed', { reason: 'step "test" failed: 1 test failed' });
    const two = await until('attempt 2', async () => (await attempts(db.pool, runId, 'unit'))[1]);
    t.match(two, { attempt: 2, retry_cause: 'failed-tests', first_attempt_id: first.jobId });
    t.match(two.reason, /^Retry 2 of 2 \(failed tests: step "test" failed: 1 test failed\)/);

    await db.pool.query(sql.unsafe`UPDATE jobs SET retry_at = now() - interval '1 second' WHERE id = ${two.id}`);
    const second = await agent.waitFor('job.dispatch', (m) => m.jobId === two.id);
    agent.jobStatus(second.jobId, 'running');
    await report(second.jobId, 'r2', 'passed', false);
    agent.jobStatus(second.jobId, 'completed');
    const done = await until('run completed', async () => {
      const run = await runRow(db.pool, runId);
      return run.status === 'completed' || run.status === 'failed' ? run : undefined;
    });
    t.equal(done.status, 'completed', done.reason ?? '');

    // A failure with no failed test (an exception, a timeout) is not a test failure.
    const other = await insertRun(db.pool, { jobs: [{ name: 'unit', runsOn: ['t'], lock: failedTests }] });
    const d = await agent.waitFor('job.dispatch', (m) => m.jobId === other.jobs['unit']!.id);
    agent.jobStatus(d.jobId, 'running');
    agent.jobStatus(d.jobId, 'failed', { reason: 'step "test" failed: ECONNREFUSED' });
    await until('run failed', async () => ((await runRow(db.pool, other.runId)).status === 'failed' ? true : undefined));
    t.equal((await attempts(db.pool, other.runId, 'unit')).length, 1, 'no retry');
    await agent.close();
  });
});
