// The dispatcher's "No jobs dispatched" annotation reads every queued job only in a full pass:
// the first, after the connected agents' labels or the scalers' gates change, and at least every
// FULL_ANNOTATION_MS. In between it reads the jobs not yet marked, and container jobs whose grace
// is over (which it fails). Real PostgreSQL (system and embedded), the real Dispatcher.
import t from 'tap';
import { pino } from 'pino';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { Dispatcher, NO_JOBS_DISPATCHED } from '../../../../kernel/orchestrator/dispatch/queue.ts';
import { AgentRegistry } from '../../../../kernel/orchestrator/dispatch/registry.ts';
import { migrate, sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow } from '../../../fixtures/runs.ts';

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: db.logger });
  const dispatcher = new Dispatcher({
    pool: db.pool,
    registry: new AgentRegistry(),
    logger: pino({ level: 'silent' }),
    maxDispatchAttempts: 3,
    sealedSecretsRetryBackoffMs: () => 1_000,
    nodeId: 'node-a',
    build: () => Promise.reject(new Error('nothing is dispatched in this test')),
    containerGraceMs: 60_000,
  });
  const reasonOf = async (id: string) => (await jobRow(db.pool, id)).reason;

  await t.test('a full pass marks every queued job; the next ones read only new jobs', async (t) => {
    const first = await insertRun(db.pool, { jobs: [{ name: 'a', runsOn: ['gpu'] }, { name: 'b', runsOn: ['gpu'] }] });
    t.same(await dispatcher.annotateUnroutable(), { marked: 2, failed: 0, full: true });
    t.same(await dispatcher.annotateUnroutable(), { marked: 0, failed: 0, full: false }, 'nothing new: nothing read is marked');
    const second = await insertRun(db.pool, { jobs: [{ name: 'c', runsOn: ['arm'] }] });
    t.same(await dispatcher.annotateUnroutable(), { marked: 1, failed: 0, full: false }, 'the new job');
    t.match(await reasonOf(second.jobs['c']!.id), new RegExp(`^${NO_JOBS_DISPATCHED}: .* arm$`));

    // A marked job is not read again while nothing changed: a reason wiped by hand stays wiped...
    const a = first.jobs['a']!.id;
    await db.pool.query(sql.unsafe`update jobs set reason = null where id = ${a}`);
    t.same(await dispatcher.annotateUnroutable(), { marked: 0, failed: 0, full: false });
    t.equal(await reasonOf(a), null, 'an incremental pass did not read the marked job');
    // ...until an agent connects: its labels are new, so the next pass is full.
    await db.pool.query(sql.unsafe`insert into agents (id, labels, connected) values ('cpu-1', '{cpu}', true)`);
    const full = await dispatcher.annotateUnroutable();
    t.equal(full.full, true, 'agents changed: a full pass');
    t.match(await reasonOf(a), /^No jobs dispatched/, 'the full pass marked it again');
    t.equal((await dispatcher.annotateUnroutable()).full, false, 'the same agents: incremental again');
  });

  await t.test('an agent that can take marked jobs clears them at once (a full pass)', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'tpu', runsOn: ['tpu'] }] });
    const id = run.jobs['tpu']!.id;
    await dispatcher.annotateUnroutable();
    t.match(await reasonOf(id), /^No jobs dispatched/);
    await db.pool.query(sql.unsafe`insert into agents (id, labels, connected) values ('tpu-1', '{tpu}', true)`);
    t.equal((await dispatcher.annotateUnroutable()).full, true);
    t.equal(await reasonOf(id), null, 'cleared: an online agent carries the labels');
    await db.pool.query(sql.unsafe`update agents set connected = false where id = 'tpu-1'`);
    t.equal((await dispatcher.annotateUnroutable()).full, true, 'the agent left: a full pass');
    t.match(await reasonOf(id), /^No jobs dispatched/);
  });

  await t.test('a change of the scalers’ gates is a full pass too', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'fpga', runsOn: ['fpga'] }] });
    const id = run.jobs['fpga']!.id;
    await dispatcher.annotateUnroutable();
    t.match(await reasonOf(id), /^No jobs dispatched/);
    let gates = ['none'];
    dispatcher.setSpawnable((matchers) => gates.some((g) => matchers.includes(g)), () => gates.join(','));
    t.equal((await dispatcher.annotateUnroutable()).full, true, 'a new spawnable check: full');
    t.equal((await dispatcher.annotateUnroutable()).full, false);
    gates = ['fpga'];
    t.equal((await dispatcher.annotateUnroutable()).full, true, 'its gates changed: full');
    t.equal(await reasonOf(id), null, 'a scaler can start an agent for it: not marked');
  });

  await t.test('a container job past its grace is failed by an incremental pass', async (t) => {
    const run = await insertRun(db.pool, { jobs: [{ name: 'boxed', runsOn: ['nowhere'], lock: { container: { image: 'alpine:3' } } }] });
    const id = run.jobs['boxed']!.id;
    await dispatcher.annotateUnroutable();
    t.equal((await dispatcher.annotateUnroutable()).full, false);
    t.equal((await jobRow(db.pool, id)).status, 'queued', 'within its grace');
    await db.pool.query(sql.unsafe`update jobs set unroutable_since = now() - interval '2 minutes' where id = ${id}`);
    const pass = await dispatcher.annotateUnroutable();
    t.same(pass, { marked: 0, failed: 1, full: false });
    t.equal((await jobRow(db.pool, id)).status, 'failed');
  });
});
