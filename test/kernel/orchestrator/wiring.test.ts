// The real orchestrator wires its subsystems from what they provide and need: it starts the
// kernel set in graph order and hands out their services; an extra subsystem that needs a service
// nobody provides, or a cycle, stops start-up before anything opens, with a message naming it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createServiceRef, provide } from '../../../core/wiring/index.ts';
import { ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator, type StartOrchestratorOptions } from '../../../kernel/orchestrator/app.ts';
import type { Subsystem } from '../../../kernel/orchestrator/context.ts';
import { dispatchServiceRef, ingestPipelineRef, runsRelayHandlerRef } from '../../../kernel/orchestrator/service-refs.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../kernel/orchestrator/subsystems.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../plugins/builtin.ts';
import { eachDatabase, testLogger, type Test } from '../../fixtures/db.ts';


const ADMIN_TOKEN = 'admin-token-0123456789abcdef';

async function options(t: Test, dbUrl: string, subsystems: readonly Subsystem[]): Promise<StartOrchestratorOptions> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-wiring-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  return {
    env: { SVC_DATABASE_URL: dbUrl, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'c'.repeat(64), SVC_AGENT_AUTH: 'none', SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    subsystems,
  };
}

async function migrationsApplied(pool: Parameters<Parameters<typeof eachDatabase>[1]>[1]['pool']): Promise<boolean> {
  const name = await pool.oneFirst(sql.unsafe`select coalesce(to_regclass(${ORCHESTRATOR_MIGRATIONS_TABLE})::text, '')`);
  return name !== '';
}

await eachDatabase(t, async (t, db) => {
  await t.test('an extra subsystem needing an unknown service stops start-up, naming both', async (t) => {
    const unknown = createServiceRef<{ url(key: string): string }>('storage-urls');
    const extra: Subsystem = { id: 'thumbnails', needs: [dispatchServiceRef, unknown], async start() {} };
    await t.rejects(startOrchestrator(await options(t, db.url, [...ORCHESTRATOR_SUBSYSTEMS, extra])), {
      code: 'SVC_ERR_WIRING_NEED_MISSING',
      message: "subsystem 'thumbnails' needs 'storage-urls', which no subsystem provides",
    });
    t.equal(await migrationsApplied(db.pool), false, 'refused before the database was touched');
  });

  await t.test('a dependency cycle stops start-up, naming its path', async (t) => {
    const left = createServiceRef<number>('left');
    const right = createServiceRef<number>('right');
    const cycle: Subsystem[] = [
      { id: 'west', provides: [left], needs: [right, ingestPipelineRef], start: async () => [provide(left, 1)] },
      { id: 'east', provides: [right], needs: [left], start: async () => [provide(right, 2)] },
    ];
    await t.rejects(startOrchestrator(await options(t, db.url, [...ORCHESTRATOR_SUBSYSTEMS, ...cycle])), { code: 'SVC_ERR_WIRING_CYCLE', message: /^dependency cycle: west → east → west / });
  });

  await t.test('a second provider of a kernel service is refused, naming both subsystems', async (t) => {
    const rival: Subsystem = { id: 'rival-dispatch', provides: [dispatchServiceRef], async start() {} };
    await t.rejects(startOrchestrator(await options(t, db.url, [...ORCHESTRATOR_SUBSYSTEMS, rival])), {
      code: 'SVC_ERR_WIRING_PROVIDED_TWICE',
      message: /'dispatch' is provided by both subsystem 'dispatch' and subsystem 'rival-dispatch'/,
    });
  });

  await t.test('the kernel set starts in graph order, hands out its services and serves the runs routes', async (t) => {
    const seen: string[] = [];
    const probe: Subsystem = {
      id: 'probe',
      needs: [runsRelayHandlerRef, ingestPipelineRef],
      async start(_ctx, deps) {
        seen.push(typeof deps.get(runsRelayHandlerRef), typeof deps.get(ingestPipelineRef).ingestDelivery);
      },
    };
    // Declared first, it still starts after what it needs.
    const orch = await startOrchestrator(await options(t, db.url, [probe, ...ORCHESTRATOR_SUBSYSTEMS]));
    t.teardown(() => orch.stop());
    t.same(orch.subsystems, ['admin-auth', 'config', 'cluster', 'identity', 'ingest', 'dispatch', 'scaling', 'checkout-auth', 'caches', 'artifacts', 'test-results', 'events', 'schedules', 'scheduling', 'run-control', 'runs', 'probe', 'forge-status', 'relay-link', 'reconcile', 'audit', 'billing']);
    t.same(seen, ['function', 'function']);
    t.ok(orch.get(dispatchServiceRef).registry, 'the dispatch service of this node');
    t.throws(() => orch.get(createServiceRef<unknown>('nobody')), { code: 'SVC_ERR_WIRING_NOT_STARTED', message: /'nobody'/ });

    const denied = await fetch(`${orch.url}/api/v1/admin/runs`);
    t.equal(denied.status, 401, 'runs admin routes are mounted (by the runs subsystem)');
    const listed = await fetch(`${orch.url}/api/v1/admin/runs`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    t.equal(listed.status, 200);
    t.same(await listed.json(), { runs: [] });
  });
}, { schema: 'empty' });
