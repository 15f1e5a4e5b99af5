// event.emit storage: the agent running a job emits, the orchestrator stores the event and
// NOTIFYs in one transaction and answers with the delivery id; rollback sends nothing.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { INTERNAL_EVENTS_CHANNEL, MAX_EVENT_PAYLOAD_BYTES, checkEvent, emitInternalEvent } from '../../../../kernel/orchestrator/events/index.ts';
import { createListener, sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startCacheNode } from '../caches/harness.ts';

t.test('event.emit is stored, NOTIFYed and answered; refusals store nothing', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startCacheNode(t, db.url);
    const heard: Array<{ id: string; name: string; orgId: string }> = [];
    const listener = await createListener({ url: db.url, logger: testLogger });
    t.teardown(() => listener.close());
    await listener.listen(INTERNAL_EVENTS_CHANNEL, (payload) => heard.push(JSON.parse(payload)));

    const agent = await TestAgent.online({ url: node.url, agentId: 'emitter', labels: ['emitter'] });
    const stranger = await TestAgent.online({ url: node.url, agentId: 'stranger', labels: ['stranger'] });
    t.teardown(async () => {
      await agent.close();
      await stranger.close();
    });
    const run = await insertRun(db.pool, { orgId: 'org-7', jobs: [{ name: 'deploy', runsOn: ['emitter'] }] });
    const jobId = run.jobs['deploy']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === jobId);

    const emit = async (who: TestAgent, body: Record<string, unknown>) => {
      const requestId = randomUUID();
      who.sendRaw({ type: 'event.emit', jobId, requestId, ...body });
      return who.waitFor('event.emit.response', (m) => m.requestId === requestId);
    };
    const ok = await emit(agent, { eventName: 'deploy.done', payload: { env: 'prod', n: 1 }, target: 'acme/widgets' });
    t.equal(ok.error, undefined);
    t.match(ok.deliveryId, /^[0-9a-f-]{36}$/, 'the delivery id is the stored event id');
    // The node's delivery loop picks the event up at once (nothing is registered for it), so
    // only the stored fields are compared here; delivery has its own tests (delivery.test.ts).
    const row = await db.pool.one(sql.unsafe`
      SELECT name, payload, target, org_id, source, run_id::text AS run_id, job_id::text AS job_id, dlq_reason
      FROM internal_events WHERE id = ${ok.deliveryId as string}`);
    t.same(row, {
      name: 'deploy.done', payload: { env: 'prod', n: 1 }, target: 'acme/widgets', org_id: 'org-7', source: 'step',
      run_id: run.runId, job_id: jobId, dlq_reason: null,
    }, 'stored with org, run and job of the emitting job');
    await until('delivered (no registration: no_match)', async () =>
      (await db.pool.oneFirst(sql.unsafe`SELECT outcome FROM internal_events WHERE id = ${ok.deliveryId as string} AND processed_at IS NOT NULL`).catch(() => null)) === 'no_match' ? true : undefined);
    await until('notification', () => (heard.length > 0 ? true : undefined));
    t.same(heard, [{ id: ok.deliveryId, name: 'deploy.done', orgId: 'org-7' }], 'NOTIFY carries the id');
    t.same((await emit(agent, { eventName: 'no-payload', payload: null })).error, undefined, 'a null payload is fine');

    const refusals: Array<[TestAgent, Record<string, unknown>, string]> = [
      [stranger, { eventName: 'x', payload: {} }, 'SVC_ERR_EVENT_JOB_NOT_OWNED'],
      [agent, { eventName: 'job_complete', payload: {} }, 'SVC_ERR_EVENT_NAME_RESERVED'],
      [agent, { eventName: '__schedule_fire', payload: {} }, 'SVC_ERR_EVENT_NAME_RESERVED'],
      [agent, { eventName: 'has space', payload: {} }, 'SVC_ERR_EVENT_NAME_INVALID'],
      [agent, { eventName: 'nul', payload: { s: 'a\u0000b' } }, 'SVC_ERR_EVENT_PAYLOAD_INVALID'],
      [agent, { eventName: 'big', payload: 'x'.repeat(MAX_EVENT_PAYLOAD_BYTES) }, 'SVC_ERR_EVENT_PAYLOAD_TOO_LARGE'],
      [agent, { eventName: 'target', payload: {}, target: '' }, 'SVC_ERR_EVENT_TARGET_INVALID'],
    ];
    for (const [who, body, code] of refusals) t.equal((await emit(who, body)).error?.code, code, `${String(body['eventName'])} → ${code}`);
    agent.sendRaw({ type: 'event.emit', jobId, requestId: randomUUID(), eventName: '', payload: {} });
    await agent.waitFor('protocol.error', (m) => m.error.code === 'SVC_ERR_PROTOCOL_INVALID');
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM internal_events`)), 2, 'refusals stored nothing');

    agent.jobStatus(jobId, 'completed');
    await until('job completed', async () => ((await db.pool.oneFirst(sql.unsafe`SELECT status FROM jobs WHERE id = ${jobId}`)) === 'completed' ? true : undefined));
    t.equal((await emit(agent, { eventName: 'late', payload: {} })).error?.code, 'SVC_ERR_EVENT_JOB_INACTIVE', 'a finished job cannot emit');
    // Step events only: the job's completion also stored job_complete / workflow_complete.
    t.equal(heard.filter((h) => h.name !== 'job_complete' && h.name !== 'workflow_complete').length, 2, 'one notification per stored event');
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM internal_events WHERE source = 'step'`)), 2);
  });
});

t.test('emitInternalEvent: insert and notification are one unit; rollback discards both', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } = await import('../../../../kernel/orchestrator/app.ts');
    const { migrate } = await import('../../../../kernel/services/db/index.ts');
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const heard: string[] = [];
    const listener = await createListener({ url: db.url, logger: testLogger });
    t.teardown(() => listener.close());
    await listener.listen(INTERNAL_EVENTS_CHANNEL, (payload) => heard.push((JSON.parse(payload) as { name: string }).name));

    await t.rejects(
      db.pool.transaction(async (tx) => {
        await emitInternalEvent(tx, { name: 'rolled-back', payload: { a: 1 }, orgId: 'org-1' });
        throw new Error('abort');
      }),
      { message: 'abort' },
    );
    const kept = await db.pool.transaction((tx) => emitInternalEvent(tx, { name: 'workflow_complete', payload: { status: 'completed' }, orgId: 'org-1', source: 'orchestrator' }));
    // Notifications arrive in commit order: once the later one is heard, the earlier would have been.
    await until('committed notification', () => (heard.includes('workflow_complete') ? true : undefined));
    t.same(heard, ['workflow_complete'], 'the rolled-back event was never announced');
    t.same(await db.pool.anyFirst(sql.unsafe`SELECT id::text FROM internal_events`), [kept.id], 'and never stored');

    t.throws(() => checkEvent({ name: '', payload: {}, orgId: 'o' }), { code: 'SVC_ERR_EVENT_NAME_INVALID' });
    t.throws(() => checkEvent({ name: 'n'.repeat(201), payload: {}, orgId: 'o' }), { code: 'SVC_ERR_EVENT_NAME_INVALID' });
    t.throws(() => checkEvent({ name: 'ok', payload: 'x'.repeat(MAX_EVENT_PAYLOAD_BYTES), orgId: 'o' }), { code: 'SVC_ERR_EVENT_PAYLOAD_TOO_LARGE' });
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    t.throws(() => checkEvent({ name: 'ok', payload: cyclic, orgId: 'o' }), { code: 'SVC_ERR_EVENT_PAYLOAD_INVALID' });
    t.throws(() => checkEvent({ name: 'ok', payload: 1n, orgId: 'o' }), { code: 'SVC_ERR_EVENT_PAYLOAD_INVALID' });
    t.throws(() => checkEvent({ name: 'ok', payload: {}, orgId: '' }), { code: 'SVC_ERR_EVENT_ORG_INVALID' });
    t.throws(() => checkEvent({ name: 'job_complete', payload: {}, orgId: 'o' }), { code: 'SVC_ERR_EVENT_NAME_RESERVED' }, 'steps may not forge system events');
    t.same(checkEvent({ name: '__schedule_fire', payload: undefined, orgId: 'o', source: 'orchestrator' }).payloadJson, 'null');
  });
});
