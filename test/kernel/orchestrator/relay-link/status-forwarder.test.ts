// The relay status forwarder end to end: a real relay and a real orchestrator (kernel subsystems)
// linked over the real WebSocket, real PostgreSQL, an agent speaking the real agent protocol. A
// run's transitions and its jobs' reach the relay's run index; a cancel shows `cancelled_by`
// (from the dashboard and from the orchestrator alone), a re-run `last_rerun_at` and its lineage;
// with the relay stopped while runs progress, the index catches up after the reconnect,
// including a run whose last message was lost (the resend at welcome).
import t from 'tap';
import { Type } from 'typebox';
import { cancelRunIn, createAgentToken } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { startRelay } from '../../../../kernel/relay/index.ts';
import { RUN_STATUS_CHANNEL } from '../../../../kernel/orchestrator/relay-link/status-feed.ts';
import { notify, sql, sqlTyped, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';


const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const IndexRow = Type.Object({
  status: Type.String(),
  workflow: Type.String(),
  repository: Type.String(),
  sha: Nullable(Type.String()),
  event_name: Nullable(Type.String()),
  ref: Nullable(Type.String()),
  created_at: Type.Number(),
  started_at: Nullable(Type.Number()),
  finished_at: Nullable(Type.Number()),
  parent_run_id: Nullable(Type.String()),
  original_run_id: Nullable(Type.String()),
  triggered_by: Nullable(Type.String()),
  cancelled_by: Nullable(Type.String()),
  last_rerun_at: Nullable(Type.Number()),
});

function indexed(relayDb: DatabasePool, runId: string) {
  return relayDb.maybeOne(sqlTyped(IndexRow)`
    select status, workflow, repository, sha, event_name, ref, created_at, started_at, finished_at, parent_run_id, original_run_id,
      triggered_by, cancelled_by, last_rerun_at
    from relay_runs where org_id = ${ORG} and run_id = ${runId}`);
}

async function indexedJobs(relayDb: DatabasePool, runId: string): Promise<Record<string, string>> {
  const rows = (await relayDb.any(sql.unsafe`select job, status from relay_jobs where org_id = ${ORG} and run_id = ${runId}`)) as readonly { job: string; status: string }[];
  return Object.fromEntries(rows.map((r) => [r.job, r.status]));
}

/** Waits (generously) until the index row of `runId` satisfies `check`. */
const indexUntil = (relayDb: DatabasePool, what: string, runId: string, check: (row: NonNullable<Awaited<ReturnType<typeof indexed>>>) => boolean, timeoutMs = 60_000) =>
  until(what, async () => {
    const row = await indexed(relayDb, runId);
    return row !== null && check(row) ? row : undefined;
  }, timeoutMs, 50);

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const alice = await stack.pat('alice');
  const post = (path: string) => fetch(`${stack.relayUrl}${path}`, { method: 'POST', headers: stack.auth(alice) });
  const forwarderPasses = async (): Promise<number> => {
    const text = await (await fetch(`${stack.orchestrator.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('svc_orch_status_forward_passes_total '));
    if (line === undefined) throw new Error('svc_orch_status_forward_passes_total is not exposed');
    return Number(line.split(' ')[1]);
  };

  let finished = '';

  await t.test("a run's transitions and its jobs' reach the index", async (t) => {
    const { token } = await createAgentToken(db.pool, { description: 'status forwarder test' });
    const agent = await TestAgent.online({ url: stack.orchestrator.url, agentId: `fwd-${db.kind}`, token, labels: ['fwd'] });
    t.teardown(() => agent.close());
    const run = await insertRun(db.pool, { orgId: ORG, repository: 'acme/forwarded', jobs: [{ name: 'build', runsOn: ['fwd'] }, { name: 'test', runsOn: ['fwd'], needs: ['build'] }] });
    finished = run.runId;
    const build = run.jobs['build']!.id;
    const test = run.jobs['test']!.id;

    const first = await indexUntil(stack.relayDb, 'the run in the index', run.runId, () => true);
    t.match(first, { workflow: 'ci', repository: 'acme/forwarded', sha: 'b'.repeat(40), event_name: 'push', ref: 'refs/heads/main' });
    t.ok(['queued', 'running'].includes(first.status), `first seen ${first.status}`);

    await agent.waitFor('job.dispatch', (m) => m.jobId === build, 60_000);
    agent.jobStatus(build, 'running');
    await indexUntil(stack.relayDb, 'run running', run.runId, (r) => r.status === 'running');
    await until('build running, test waiting in the index', async () => {
      const jobs = await indexedJobs(stack.relayDb, run.runId);
      return jobs['build'] === 'running' && jobs['test'] === 'waiting' ? true : undefined;
    }, 60_000, 50);

    agent.jobStatus(build, 'completed');
    await agent.waitFor('job.dispatch', (m) => m.jobId === test, 60_000);
    agent.jobStatus(test, 'running');
    agent.jobStatus(test, 'completed');
    const done = await indexUntil(stack.relayDb, 'run completed', run.runId, (r) => r.status === 'completed' && r.finished_at !== null);
    t.ok(done.started_at !== null && done.started_at <= (done.finished_at as number), 'started and finished times');
    await until('both jobs completed in the index', async () => {
      const jobs = await indexedJobs(stack.relayDb, run.runId);
      return jobs['build'] === 'completed' && jobs['test'] === 'completed' ? true : undefined;
    }, 60_000, 50);
    const pending = await db.pool.oneFirst(sql.unsafe`select count(*)::int from run_status_feed where run_id = ${run.runId} and relay_sent_at is null`);
    t.equal(pending, 0, "the run's feed rows are marked sent");

    const listed = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs?repository=acme%2Fforwarded`, { headers: stack.auth(alice) });
    const body = (await listed.json()) as { runs: Array<{ runId: string; status: string; jobs: Record<string, number> }> };
    t.match(body.runs, [{ runId: run.runId, status: 'completed', jobs: { completed: 2 } }], 'GET /v1/orgs/:orgId/runs lists it');
  });

  await t.test('cancel: cancelled_by from the dashboard and from the orchestrator alone', async (t) => {
    const viaDashboard = await insertRun(db.pool, { orgId: ORG, jobs: [{ name: 'build', runsOn: ['nobody-has-this'] }] });
    await indexUntil(stack.relayDb, 'queued run indexed', viaDashboard.runId, (r) => r.status === 'queued');
    const res = await post(`/orgs/${ORG}/runs/${viaDashboard.runId}/cancel`);
    t.equal(res.status, 200);
    const cancelled = await indexUntil(stack.relayDb, 'cancelled in the index', viaDashboard.runId, (r) => r.status === 'cancelled');
    t.equal(cancelled.cancelled_by, 'alice');
    await until('its job cancelled in the index', async () => ((await indexedJobs(stack.relayDb, viaDashboard.runId))['build'] === 'cancelled' ? true : undefined), 60_000, 50);

    // Cancelled on the orchestrator (an operator, a deadline): only the forwarder can tell the relay.
    const direct = await insertRun(db.pool, { orgId: ORG, jobs: [{ name: 'build', runsOn: ['nobody-has-this'] }] });
    await cancelRunIn(db.pool, direct.runId, 'ops-bob');
    const row = await indexUntil(stack.relayDb, 'cancelled by ops-bob', direct.runId, (r) => r.status === 'cancelled');
    t.equal(row.cancelled_by, 'ops-bob');
  });

  await t.test('re-run: lineage on the new run, last_rerun_at on the one re-run', async (t) => {
    const pushed = await stack.pushRun();
    await indexUntil(stack.relayDb, 'pushed run indexed', pushed.runId, () => true);
    const res = await post(`/orgs/${ORG}/runs/${pushed.runId}/rerun`);
    t.equal(res.status, 200);
    const { newRunId } = (await res.json()) as { newRunId: string };
    const child = await indexUntil(stack.relayDb, 're-run indexed', newRunId, () => true);
    t.match(child, { parent_run_id: pushed.runId, original_run_id: pushed.runId, triggered_by: 'alice' });
    const parent = await indexUntil(stack.relayDb, 'last_rerun_at', pushed.runId, (r) => r.last_rerun_at !== null);
    t.ok((parent.last_rerun_at as number) >= parent.created_at);

    // Also without the dashboard's own write: the re-run's next message sets it again.
    await stack.relayDb.query(sql.unsafe`update relay_runs set last_rerun_at = null where org_id = ${ORG} and run_id = ${pushed.runId}`);
    await cancelRunIn(db.pool, newRunId, 'alice');
    await indexUntil(stack.relayDb, 're-run cancelled', newRunId, (r) => r.status === 'cancelled');
    await indexUntil(stack.relayDb, 'last_rerun_at from the orchestrator', pushed.runId, (r) => r.last_rerun_at === child.created_at);
    t.pass('last_rerun_at is the re-run creation time');
  });

  await t.test('relay stopped while runs progress: the index catches up after the reconnect', async (t) => {
    const port = new URL(stack.relayUrl).port;
    await stack.relay.stop();
    // A message the relay never stored although it was sent (lost with the connection).
    await stack.relayDb.query(sql.unsafe`delete from relay_runs where org_id = ${ORG} and run_id = ${finished}`);
    await stack.relayDb.query(sql.unsafe`delete from relay_jobs where org_id = ${ORG} and run_id = ${finished}`);

    const during = await insertRun(db.pool, { orgId: ORG, repository: 'acme/while-down', jobs: [{ name: 'build', runsOn: ['nobody-has-this'] }] });
    await cancelRunIn(db.pool, during.runId, 'carol');
    // Two forwarder passes finished after the change committed (so one began after it), woken by
    // our own wake-ups on the feed's channel rather than waited for.
    const before = await forwarderPasses();
    await until('two forwarder passes after the change', async () => {
      if ((await forwarderPasses()) >= before + 2) return true;
      await notify(db.pool, RUN_STATUS_CHANNEL, '');
      return undefined;
    }, 60_000, 50);
    const pending = await db.pool.oneFirst(sql.unsafe`select count(*)::int from run_status_feed where run_id = ${during.runId} and relay_sent_at is null`);
    t.ok((pending as number) > 0, 'changes made while the relay is down stay pending');

    const relay = await startRelay({
      logger: testLogger,
      env: { SVC_RELAY_DATABASE_URL: stack.relayDbUrl, SVC_RELAY_PORT: port, SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: '/nonexistent-relay-tests-use-a-url' },
    });
    t.teardown(() => relay.stop());
    // The orchestrator redials with backoff (at most 30 s between attempts): wait generously.
    const caught = await indexUntil(stack.relayDb, 'the run changed while down', during.runId, (r) => r.status === 'cancelled', 120_000);
    t.equal(caught.cancelled_by, 'carol');
    await until('its job cancelled in the index', async () => ((await indexedJobs(stack.relayDb, during.runId))['build'] === 'cancelled' ? true : undefined), 60_000, 50);
    const resent = await indexUntil(stack.relayDb, 'the lost run resent at welcome', finished, (r) => r.status === 'completed', 60_000);
    t.ok(resent.finished_at !== null);
    await until('its jobs resent too', async () => {
      const jobs = await indexedJobs(stack.relayDb, finished);
      return jobs['build'] === 'completed' && jobs['test'] === 'completed' ? true : undefined;
    }, 60_000, 50);
  });
});
