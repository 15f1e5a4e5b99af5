// Checkout credentials for a dispatched job come from the run's source through its provider:
// here a `git` source with a deploy token. A run without a source gets none (fallback URL).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { loadDispatchRow } from '../../../../kernel/orchestrator/dispatch/message.ts';
import { checkoutAuthResolver } from '../../../../kernel/orchestrator/sources/checkout-auth.ts';
import { createSource } from '../../../../kernel/orchestrator/sources/store.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../../kernel/orchestrator/subsystems.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { insertRun } from '../../../fixtures/runs.ts';


t.test('a run with a git source gets the remote and its deploy token; a run without gets none', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-checkout-auth-'));
    t.teardown(() => rm(dataDir, { recursive: true, force: true }));
    const orch = await startOrchestrator({
      env: { SVC_DATABASE_URL: db.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_SECRET_KEY: 'b'.repeat(64), SVC_AGENT_AUTH: 'none' },
      cwd: dataDir,
      logger: testLogger,
      plugins: orchestratorPlugins,
      subsystems: ORCHESTRATOR_SUBSYSTEMS,
    });
    t.teardown(() => orch.stop());
    const ctx = orch.ctx;
    const { source } = await createSource(ctx.db, ctx.masterKeys.current as Buffer, {
      orgId: 'acme',
      providerKind: 'git',
      settings: { remoteUrl: 'https://git.example.test/acme/widgets.git', repository: 'acme/widgets' },
      credentials: { token: 'deploy-token-value', username: 'ci' },
    });

    const withSource = await insertRun(ctx.db, { orgId: 'acme', repository: 'acme/widgets', jobs: [{ name: 'build' }] });
    await ctx.db.query(sql.unsafe`update runs set source_id = ${source.id} where id = ${withSource.runId}`);
    const row = await loadDispatchRow(ctx.db, withSource.jobs['build']!.id);
    t.ok(row);
    const auth = await checkoutAuthResolver(ctx)({ row: row!, repository: row!.repository });
    t.same(auth, { cloneUrl: 'https://git.example.test/acme/widgets.git', token: 'deploy-token-value', username: 'ci' });

    const without = await insertRun(ctx.db, { orgId: 'acme', jobs: [{ name: 'build' }] });
    const bare = await loadDispatchRow(ctx.db, without.jobs['build']!.id);
    t.equal(await checkoutAuthResolver(ctx)({ row: bare!, repository: bare!.repository }), null, 'no source: the dispatcher falls back to the event clone URL');
  });
});
