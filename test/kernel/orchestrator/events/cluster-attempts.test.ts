// The cluster setting maxDispatchAttempts honoured by internal event delivery, on real
// PostgreSQL: the event worker reads it from the node's live cluster settings (as the events
// subsystem wires it, a getter over ClusterSettingsService.current()) at each failure, so a
// PATCH that reaches the node by NOTIFY changes after how many attempts a failing delivery is
// dead-lettered, without a restart.
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { patchClusterSettings, startClusterSettings } from '../../../../kernel/orchestrator/cluster/settings.ts';
import { emitInternalEvent } from '../../../../kernel/orchestrator/events/emit.ts';
import { EventWorker } from '../../../../kernel/orchestrator/events/worker.ts';
import { createListener, migrate, sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { createMetrics } from '../../../../kernel/services/metrics.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';

const SEED = { maxDispatchAttempts: 5, sealedSecretsRetryBackoffMs: 60_000 };

async function emit(pool: DatabasePool, name: string): Promise<string> {
  return pool.transaction(async (tx) => (await emitInternalEvent(tx, { name, payload: {}, orgId: 'org-1' })).id);
}

async function dlqRow(pool: DatabasePool, id: string): Promise<{ attempts: number; dlq_reason: string | null } | undefined> {
  const row = (await pool.one(sql.unsafe`SELECT attempts, dlq_reason FROM internal_events WHERE id = ${id}`)) as { attempts: number; dlq_reason: string | null };
  return row.dlq_reason === null ? undefined : row;
}

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const listener = await createListener({ url: db.url, logger: testLogger });
  t.teardown(() => listener.close());
  const settings = await startClusterSettings({ pool: db.pool, listener, seed: SEED, nodeId: 'node-e', logger: testLogger });
  const calls = new Map<string, number>();
  const worker = new EventWorker({
    pool: db.pool,
    logger: testLogger,
    metrics: createMetrics({ defaultMetrics: false }),
    nodeId: 'node-e',
    leaseDurationMs: 60_000,
    get maxDispatchAttempts() {
      return settings.current().maxDispatchAttempts;
    },
    retryBaseMs: 20,
    retryMaxMs: 100,
    pollMs: 100,
    deliver: async (event) => {
      calls.set(event.id, (calls.get(event.id) ?? 0) + 1);
      throw new Error('hook answered 500');
    },
  });
  worker.start();
  t.teardown(() => worker.stop());

  const change = async (maxDispatchAttempts: number) => {
    // Written as another node (or svc-admin) would: only the NOTIFY tells this node.
    await patchClusterSettings(db.pool, { maxDispatchAttempts }, SEED, 'test');
    await until(`the node saw maxDispatchAttempts ${maxDispatchAttempts}`, () => (settings.current().maxDispatchAttempts === maxDispatchAttempts ? true : undefined));
  };

  await t.test('dead-lettered after the cluster value, changed live', async (t) => {
    t.equal(settings.current().maxDispatchAttempts, 5, 'seeded from this node');
    await change(2);
    const two = await emit(db.pool, 'poison.two');
    worker.wake();
    const first = await until('the first event dead-lettered', () => dlqRow(db.pool, two), 60_000);
    t.same(first, { attempts: 2, dlq_reason: 'exhausted_retries' });
    t.equal(calls.get(two), 2, 'two deliveries, not the config default five');

    await change(4);
    const four = await emit(db.pool, 'poison.four');
    worker.wake();
    const second = await until('the second event dead-lettered', () => dlqRow(db.pool, four), 60_000);
    t.same(second, { attempts: 4, dlq_reason: 'exhausted_retries' });
    t.equal(calls.get(four), 4);
  });
});
