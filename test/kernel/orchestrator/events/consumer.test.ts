// Delivering internal events to registered workflows against a real PostgreSQL: real
// `registrations` rows (replaceRegistrations), one run per matching workflow keyed `event:<id>`
// (a redelivery finds it), chain depth and the triggering event on the run, targets, completion
// statuses, failure batches and schedule fires; and the circuit breaker in front of the store.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { notifyJobsQueued } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { checkChainDepth, OrgEventRate } from '../../../../kernel/orchestrator/events/breaker.ts';
import { configureCompletionLimits, emitWorkflowComplete } from '../../../../kernel/orchestrator/events/completion.ts';
import { commitDeliveries, deliverEvent, LeaseLost, prepareDelivery, type ConsumerDeps } from '../../../../kernel/orchestrator/events/consumer.ts';
import { expireLeases, leaseEvents, type LeasedEvent } from '../../../../kernel/orchestrator/events/delivery-store.ts';
import { emitInternalEvent, type InternalEventInput } from '../../../../kernel/orchestrator/events/emit.ts';
import { replaceRegistrations } from '../../../../kernel/orchestrator/ingest/steps/registrations.ts';
import { createSource } from '../../../../kernel/orchestrator/sources/store.ts';
import { migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger, type TestDb } from '../../../fixtures/db.ts';
import { lockOf, trig, workflow } from '../../../fixtures/locks.ts';
import { insertRun } from '../../../fixtures/runs.ts';

const ORG = 'acme';
const REPO = 'acme/workflows';

async function setup(db: TestDb): Promise<{ sourceId: string; deps: ConsumerDeps }> {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const { source } = await createSource(db.pool, randomBytes(32), { orgId: ORG, providerKind: 'forge', targetId: '7' });
  const lock = lockOf([
    workflow('deploy', [trig.event({ name: 'deploy-requested' })]),
    workflow('deploy-canary', [trig.event({ name: 'deploy-requested' })]),
    workflow('after-build', [trig.workflow_complete({ workflows: ['build'], statuses: ['success'] })]),
    workflow('nightly', [trig.schedule({ cron: '* * * * *', timezone: 'UTC' })]),
    workflow('on-registration', [trig.lifecycle({ events: ['registration.updated'] })]),
    workflow('triage', [trig.workflows_failed_batch({ workflows: ['build'], threshold: 2, windowSeconds: 3600 })]),
  ]);
  const count = await db.pool.transaction((tx) =>
    replaceRegistrations(tx, { orgId: ORG, sourceId: source.id, repository: REPO, repositoryId: '42', cloneUrl: 'https://git.example.test/acme/workflows.git', branch: 'main', sha: 'c'.repeat(40), lock }),
  );
  if (count !== 6) throw new Error(`expected 6 registrations, got ${count}`);
  const deps: ConsumerDeps = { pool: db.pool, logger: testLogger, nodeId: 'node-a', checkCaches: async () => ({ buildKey: null }), notifyJobsQueued };
  return { sourceId: source.id, deps };
}

async function emit(pool: DatabasePool, input: Omit<InternalEventInput, 'orgId'>): Promise<string> {
  return (await pool.transaction((tx) => emitInternalEvent(tx, { orgId: ORG, ...input }))).id;
}

/** Leases `id` for `node` (other due events are left pending). */
async function lease(pool: DatabasePool, id: string, node = 'node-a'): Promise<LeasedEvent> {
  const leased = await leaseEvents(pool, node, 60_000, 1_000);
  const others = leased.filter((e) => e.id !== id).map((e) => e.id);
  if (others.length > 0) {
    await pool.query(sql.unsafe`
      UPDATE internal_events SET lease_until = NULL, lease_node = NULL, claimed_at = NULL, attempts = attempts - 1
      WHERE id = ANY(${sql.array(others, 'uuid')})`);
  }
  const mine = leased.find((e) => e.id === id);
  if (mine === undefined) throw new Error(`event ${id} was not leasable`);
  return mine;
}

interface RunOf {
  id: string;
  workflow: string;
  delivery_id: string;
  chain_depth: number;
  triggering_event_id: string | null;
  event_name: string;
}

async function runsOf(pool: DatabasePool, eventId: string): Promise<RunOf[]> {
  return (await pool.any(sql.unsafe`
    SELECT id::text AS id, workflow, delivery_id, chain_depth, triggering_event_id::text AS triggering_event_id, event_name
    FROM runs WHERE delivery_id = ${`event:${eventId}`} ORDER BY workflow`)) as never;
}

async function eventRow(pool: DatabasePool, id: string): Promise<{ processed: boolean; outcome: string | null; run_ids: string[] }> {
  return (await pool.one(sql.unsafe`SELECT processed_at IS NOT NULL AS processed, outcome, run_ids::text[] AS run_ids FROM internal_events WHERE id = ${id}`)) as never;
}

/** A finished run of workflow `build` (status as the record has it) and its completion event. */
async function completion(pool: DatabasePool, status: 'completed' | 'failed'): Promise<string> {
  const run = await insertRun(pool, { orgId: ORG, repository: 'acme/app', workflow: 'build', status, jobs: [{ name: 'compile', status }] });
  await pool.query(sql.unsafe`UPDATE runs SET finished_at = clock_timestamp() WHERE id = ${run.runId}`);
  return pool.transaction(async (tx) => {
    await emitWorkflowComplete(tx, run.runId, status);
    return String(await tx.oneFirst(sql.unsafe`SELECT id::text FROM internal_events WHERE run_id = ${run.runId} AND name = 'workflow_complete'`));
  });
}

t.test('deliverEvent: one run per matching registration, idempotent per event', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const { deps } = await setup(db);

    await t.test('registration.updated starts lifecycle workflows', async (t) => {
      const id = String(await db.pool.oneFirst(sql.unsafe`SELECT id::text FROM internal_events WHERE name = 'registration.updated'`));
      const result = await deliverEvent(deps, await lease(db.pool, id));
      const runs = await runsOf(db.pool, id);
      t.same(runs.map((r) => r.workflow), ['on-registration']);
      t.same(result.runIds, runs.map((r) => r.id));
      t.match(runs[0], { chain_depth: 1, triggering_event_id: id, event_name: 'registration.updated' });
      t.equal((await eventRow(db.pool, id)).processed, true);
    });

    await t.test('a custom event runs every workflow registered for it, once, however often delivered', async (t) => {
      const id = await emit(db.pool, { name: 'deploy-requested', payload: { env: 'prod' }, chainDepth: 1 });
      const first = await deliverEvent(deps, await lease(db.pool, id));
      const runs = await runsOf(db.pool, id);
      t.same(runs.map((r) => r.workflow), ['deploy', 'deploy-canary'], 'one run per matching workflow');
      for (const r of runs) t.match(r, { delivery_id: `event:${id}`, chain_depth: 2, triggering_event_id: id, event_name: 'event:deploy-requested' });
      t.same([...first.runIds].sort(), runs.map((r) => r.id).sort());
      const row = await eventRow(db.pool, id);
      t.match(row, { processed: true, outcome: /^matched: /u });
      t.same([...row.run_ids].sort(), runs.map((r) => r.id).sort(), 'the event names its runs');
      t.ok(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM jobs WHERE run_id = ANY(${sql.array(first.runIds, 'uuid')})`)) >= 2, 'the runs have their jobs');

      // A redelivery (the processed mark lost, as after a crash between the two) finds the runs.
      await db.pool.query(sql.unsafe`UPDATE internal_events SET processed_at = NULL WHERE id = ${id}`);
      const again = await deliverEvent({ ...deps, nodeId: 'node-b' }, await lease(db.pool, id, 'node-b'));
      t.same([...again.runIds].sort(), [...first.runIds].sort(), 'the same runs');
      t.match(again.outcome, /\(existing\)/);
      t.equal((await runsOf(db.pool, id)).length, 2, 'no second run');
      t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM runs WHERE triggering_event_id = ${id}`)), 2);
    });

    await t.test('a delivery whose lease moved to another node commits nothing', async (t) => {
      const id = await emit(db.pool, { name: 'deploy-requested', payload: {} });
      const stale = await lease(db.pool, id, 'node-a');
      await db.pool.query(sql.unsafe`UPDATE internal_events SET lease_until = clock_timestamp() - interval '1 second' WHERE id = ${id}`);
      t.equal((await expireLeases(db.pool)).length, 1);
      const fresh = await lease(db.pool, id, 'node-b');
      const lost: unknown = await deliverEvent(deps, stale).then(() => null, (error: unknown) => error);
      t.ok(lost instanceof LeaseLost, 'the stale delivery is told it lost the lease');
      t.same(await runsOf(db.pool, id), [], 'and its runs were rolled back');
      const done = await deliverEvent({ ...deps, nodeId: 'node-b' }, fresh);
      t.equal(done.runIds.length, 2);
      t.equal((await runsOf(db.pool, id)).length, 2);
    });

    await t.test('a chunk commits together; a lost lease or a failing event is reported alone', async (t) => {
      const ids = [await emit(db.pool, { name: 'deploy-requested', payload: { n: 1 } }), await emit(db.pool, { name: 'deploy-requested', payload: { n: 2 } }), await emit(db.pool, { name: 'deploy-requested', payload: { n: 3 } })];
      const leased = await leaseEvents(db.pool, 'node-a', 60_000, 1_000);
      const mine = ids.map((id) => leased.find((e) => e.id === id)!);
      // The second lost its lease to node-b meanwhile.
      await db.pool.query(sql.unsafe`UPDATE internal_events SET lease_node = 'node-b' WHERE id = ${ids[1]!}`);
      const prepared = await Promise.all(mine.map((e) => prepareDelivery(deps, e)));
      const outcomes = await commitDeliveries(deps, prepared);
      t.same(outcomes.map((o) => o.ok), [true, false, true]);
      t.ok(!outcomes[1]!.ok && outcomes[1]!.error instanceof LeaseLost, 'the lost one is reported as such');
      t.equal((await runsOf(db.pool, ids[0]!)).length, 2);
      t.equal((await runsOf(db.pool, ids[1]!)).length, 0, 'no runs for the lost one');
      t.equal((await runsOf(db.pool, ids[2]!)).length, 2);
      t.match(await eventRow(db.pool, ids[2]!), { processed: true, outcome: /^matched: / });

      // One event whose runs cannot be written: the chunk falls back to one at a time.
      const more = [await emit(db.pool, { name: 'deploy-requested', payload: {} }), await emit(db.pool, { name: 'deploy-requested', payload: {} })];
      const again = await leaseEvents(db.pool, 'node-a', 60_000, 1_000);
      const [good, bad] = more.map((id) => again.find((e) => e.id === id)!);
      const preparedGood = await prepareDelivery(deps, good!);
      const preparedBad = await prepareDelivery(deps, bad!);
      // A plan whose job cannot be inserted (a runsOn that is not a list).
      const broken = { ...preparedBad, kept: preparedBad.kept.map((k) => ({ ...k, registration: { ...k.registration, lockEntry: { ...k.registration.lockEntry, jobs: [{ ...k.registration.lockEntry.jobs[0]!, runsOn: 7 as never }] } } })) };
      const mixed = await commitDeliveries(deps, [preparedGood, broken]);
      t.same(mixed.map((o) => o.ok), [true, false], 'the good event commits, the broken one fails alone');
      t.equal((await runsOf(db.pool, more[0]!)).length, 2);
      t.equal((await runsOf(db.pool, more[1]!)).length, 0);
    });

    await t.test('a target naming one workflow skips the others', async (t) => {
      const id = await emit(db.pool, { name: 'deploy-requested', payload: {}, target: 'deploy' });
      const result = await deliverEvent(deps, await lease(db.pool, id));
      t.same((await runsOf(db.pool, id)).map((r) => r.workflow), ['deploy']);
      t.match(result.outcome, /deploy-canary: not the event's target deploy/);
      t.match((await eventRow(db.pool, id)).outcome, /deploy-canary: not the event's target deploy/);
      const byRepo = await emit(db.pool, { name: 'deploy-requested', payload: {}, target: REPO });
      await deliverEvent(deps, await lease(db.pool, byRepo));
      t.same((await runsOf(db.pool, byRepo)).map((r) => r.workflow), ['deploy', 'deploy-canary'], 'a repository target keeps its workflows');
      const elsewhere = await emit(db.pool, { name: 'deploy-requested', payload: {}, target: 'other/repo' });
      const none = await deliverEvent(deps, await lease(db.pool, elsewhere));
      t.same(await runsOf(db.pool, elsewhere), []);
      t.match(none.outcome, /^no_match; /);
    });

    await t.test('workflow_complete: the status filter decides, and the reason is recorded', async (t) => {
      const ok = await completion(db.pool, 'completed');
      await deliverEvent(deps, await lease(db.pool, ok));
      const runs = await runsOf(db.pool, ok);
      t.same(runs.map((r) => r.workflow), ['after-build']);
      t.match(runs[0], { chain_depth: 1, event_name: 'workflow_complete' });

      const failed = await completion(db.pool, 'failed');
      await deliverEvent(deps, await lease(db.pool, failed));
      t.same(await runsOf(db.pool, failed), [], 'a failure does not match statuses [success] (and one failure is below the batch threshold)');
      const outcome = (await eventRow(db.pool, failed)).outcome ?? '';
      t.match(outcome, /^no_match; /);
      t.match(outcome, /after-build: no_match, .*failed/);
      t.match(outcome, /triage: no_match, 1 failure in the last 3600 s/);
    });

    await t.test('workflows_failed_batch fires when the threshold is reached, then counts again from its run', async (t) => {
      // One failure is already recorded (previous subtest): the second reaches the threshold of 2.
      const second = await completion(db.pool, 'failed');
      await deliverEvent(deps, await lease(db.pool, second));
      const fired = await runsOf(db.pool, second);
      t.same(fired.map((r) => r.workflow), ['triage'], 'the second failure in the window fires the batch');
      t.match(fired[0], { event_name: 'workflows_failed_batch' });

      const third = await completion(db.pool, 'failed');
      await deliverEvent(deps, await lease(db.pool, third));
      t.same(await runsOf(db.pool, third), [], 'a third failure starts a new count (1 since the batch run)');
      t.match((await eventRow(db.pool, third)).outcome, /triage: no_match, 1 failure/);

      const fourth = await completion(db.pool, 'failed');
      await deliverEvent(deps, await lease(db.pool, fourth));
      t.same((await runsOf(db.pool, fourth)).map((r) => r.workflow), ['triage'], 'and fires again at the next threshold');
    });

    await t.test('a schedule fire runs its own workflow only', async (t) => {
      const id = await emit(db.pool, { name: '__schedule_fire', source: 'orchestrator', payload: { repository: REPO, workflow: 'nightly', triggerIndex: 0, scheduledAt: new Date().toISOString() } });
      await deliverEvent(deps, await lease(db.pool, id));
      const runs = await runsOf(db.pool, id);
      t.same(runs.map((r) => r.workflow), ['nightly']);
      t.match(runs[0], { event_name: 'schedule', chain_depth: 0, triggering_event_id: id }, 'a schedule starts a chain at depth 0');
      const gone = await emit(db.pool, { name: '__schedule_fire', source: 'orchestrator', payload: { repository: REPO, workflow: 'removed', triggerIndex: 0 } });
      const result = await deliverEvent(deps, await lease(db.pool, gone));
      t.same(result.runIds, []);
      t.match(result.outcome, /no longer registered/);
    });

    await t.test('an event nothing is registered for is processed with no_match', async (t) => {
      const id = await emit(db.pool, { name: 'nobody-listens', payload: {} });
      const result = await deliverEvent(deps, await lease(db.pool, id));
      t.same(result, { runIds: [], outcome: 'no_match' });
      t.equal((await eventRow(db.pool, id)).processed, true);
    });
  });
});

t.test('circuit breaker: chain depth and per-org rate', async (t) => {
  t.doesNotThrow(() => checkChainDepth('x', 2, { maxChainDepth: 2 }), 'at the limit is allowed');
  t.throws(() => checkChainDepth('x', 3, { maxChainDepth: 2 }), { code: 'SVC_ERR_EVENT_CHAIN_TOO_DEEP' });

  let now = 1_000_000;
  const rate = new OrgEventRate(2, () => now);
  rate.take('org-a', 'e');
  rate.take('org-a', 'e');
  t.throws(() => rate.take('org-a', 'e'), { code: 'SVC_ERR_EVENT_RATE_LIMITED' }, 'the third in a minute is refused');
  t.doesNotThrow(() => rate.take('org-b', 'e'), 'orgs have their own windows');
  now += 30_000;
  t.throws(() => rate.take('org-a', 'e'), { code: 'SVC_ERR_EVENT_RATE_LIMITED', retryAfterSeconds: 30 }, 'still within the minute');
  now += 30_000;
  t.doesNotThrow(() => rate.take('org-a', 'e'), 'the window slid past the first two');
  t.doesNotThrow(() => rate.take('org-a', 'e'));
  t.throws(() => rate.take('org-a', 'e'), { code: 'SVC_ERR_EVENT_RATE_LIMITED' });

  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    configureCompletionLimits({ maxChainDepth: 2 });
    t.teardown(() => configureCompletionLimits({ maxChainDepth: 10 }));
    const deep = await insertRun(db.pool, { orgId: ORG, workflow: 'loop', status: 'completed', jobs: [{ name: 'j', status: 'completed' }] });
    await db.pool.query(sql.unsafe`UPDATE runs SET chain_depth = 3 WHERE id = ${deep.runId}`);
    await db.pool.transaction((tx) => emitWorkflowComplete(tx, deep.runId, 'completed'));
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM internal_events WHERE run_id = ${deep.runId}`)), 0, 'no event stored past the limit');
    const refusal = await db.pool.one(sql.unsafe`SELECT org_id, name, run_id::text AS run_id, chain_depth, reason, detail FROM internal_event_refusals`);
    t.match(refusal, { org_id: ORG, name: 'workflow_complete', run_id: deep.runId, chain_depth: 3, reason: 'chain_depth', detail: /limit is 2/ });

    const within = await insertRun(db.pool, { orgId: ORG, workflow: 'loop', status: 'failed', jobs: [{ name: 'j', status: 'failed' }] });
    await db.pool.query(sql.unsafe`UPDATE runs SET chain_depth = 2 WHERE id = ${within.runId}`);
    await db.pool.transaction((tx) => emitWorkflowComplete(tx, within.runId, 'failed'));
    const stored = await db.pool.one(sql.unsafe`SELECT name, chain_depth, payload FROM internal_events WHERE run_id = ${within.runId}`);
    t.match(stored, { name: 'workflow_complete', chain_depth: 2, payload: { workflow: 'loop', status: 'failed', runId: within.runId } });
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM internal_event_refusals`)), 1);
  });
});
