// svc-admin cluster-settings show|set and org-settings show|set in-process (runCli) against a real
// database: text and --json output, values range-checked by the routes' schemas (a refusal exits
// non-zero and changes nothing), removed trust-policy values refused with what replaced them, and
// a running orchestrator applying a cluster-settings change made by the CLI without a restart.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { adminAuthSubsystem } from '../../../kernel/orchestrator/admin-auth/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE, startOrchestrator } from '../../../kernel/orchestrator/app.ts';
import { clusterSubsystem } from '../../../kernel/orchestrator/cluster/subsystem.ts';
import { clusterServiceRef } from '../../../kernel/orchestrator/service-refs.ts';
import { migrate, sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { until } from '../../fixtures/runs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
  const run = (args: string[], extra: Record<string, string> = {}) => runCli(BIN, args, { env: env({ SVC_DATABASE_URL: db.url, ...extra }) });
  const clusterRow = () => db.pool.maybeOne(sql.unsafe`SELECT max_dispatch_attempts, sealed_secrets_retry_backoff_ms, updated_by FROM cluster_settings`);

  await t.test('cluster-settings show and set', async (t) => {
    const before = await run(['cluster-settings', 'show', '--json'], { SVC_CLUSTER_MAX_DISPATCH_ATTEMPTS: '6' });
    t.equal(before.code, 0, before.stderr);
    t.match(JSON.parse(before.stdout), { settings: { maxDispatchAttempts: 6, sealedSecretsRetryBackoffMs: 60_000 }, updatedAt: '' }, 'nothing stored: what this config would seed');
    t.equal(await clusterRow(), null, 'show writes nothing');

    const set = await run(['cluster-settings', 'set', '--max-dispatch-attempts', '3'], { SVC_SEALED_SECRETS_RETRY_BACKOFF_MS: '90000' });
    t.equal(set.code, 0, set.stderr);
    t.match(set.stdout, /^maxDispatchAttempts {10}3\nsealedSecretsRetryBackoffMs {2}90000\nupdated \d{4}-.* by svc-admin/);
    t.match(await clusterRow(), { max_dispatch_attempts: 3, sealed_secrets_retry_backoff_ms: 90_000 }, 'created from the config, with the change');

    const json = await run(['cluster-settings', 'set', '--sealed-secrets-retry-backoff-ms', '30000', '--json']);
    t.equal(json.code, 0, json.stderr);
    t.same(JSON.parse(json.stdout).settings, { maxDispatchAttempts: 3, sealedSecretsRetryBackoffMs: 30_000 });
    const shown = await run(['cluster-settings', 'show']);
    t.equal(shown.code, 0, shown.stderr);
    t.match(shown.stdout, /maxDispatchAttempts {10}3\nsealedSecretsRetryBackoffMs {2}30000\n/);

    const stored = await clusterRow();
    for (const [args, message] of [
      [['--max-dispatch-attempts', '0'], /maxDispatchAttempts/],
      [['--max-dispatch-attempts', '101'], /maxDispatchAttempts/],
      [['--sealed-secrets-retry-backoff-ms', '10'], /sealedSecretsRetryBackoffMs/],
      [['--max-dispatch-attempts', 'many'], /integer/i],
      [['--heartbeat-ms', '1000'], /heartbeat-ms/],
      [[], /name a setting/],
    ] as Array<[string[], RegExp]>) {
      const refused = await run(['cluster-settings', 'set', ...args]);
      t.not(refused.code, 0, args.join(' '));
      t.match(refused.stderr, message, args.join(' '));
    }
    t.same(await clusterRow(), stored, 'refusals changed nothing');
  });

  await t.test('a running orchestrator applies a CLI change without a restart', async (t) => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-settings-cli-'));
    const orch = await startOrchestrator({
      env: { SVC_DATABASE_URL: db.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_INSTANCE_ID: 'node-cli' },
      cwd: dataDir,
      logger: testLogger,
      plugins: () => ({ builtIns: [], config: {}, selection: {} }),
      subsystems: [adminAuthSubsystem, clusterSubsystem],
    });
    t.teardown(async () => {
      await orch.stop();
      await rm(dataDir, { recursive: true, force: true });
    });
    const settings = orch.get(clusterServiceRef).settings;
    t.same(settings.current(), { maxDispatchAttempts: 3, sealedSecretsRetryBackoffMs: 30_000 }, 'the stored row, not the node config (5, 60000)');
    const set = await run(['cluster-settings', 'set', '--max-dispatch-attempts', '8']);
    t.equal(set.code, 0, set.stderr);
    await until('the node applied the change', () => (settings.current().maxDispatchAttempts === 8 ? true : undefined), 20_000);
    t.pass('applied by NOTIFY');
  });

  await t.test('org-settings show and set', async (t) => {
    const policyRow = () => db.pool.maybeOne(sql.unsafe`SELECT fork_policy FROM org_trust_policies WHERE org_id = 'acme'`);
    const first = await run(['org-settings', 'show', '--org', 'acme']);
    t.equal(first.code, 0, first.stderr);
    t.match(first.stdout, /org {9}acme\nforkPolicy {2}\(not set\)  → sources without their own fork policy: run\nnever changed/);

    const set = await run(['org-settings', 'set', '--org', 'acme', '--fork-policy', 'ignore']);
    t.equal(set.code, 0, set.stderr);
    t.match(set.stdout, /forkPolicy {2}ignore  → sources without their own fork policy: ignore\nupdated .* by svc-admin/);
    t.same(await policyRow(), { fork_policy: 'ignore' });
    const json = await run(['org-settings', 'show', '--org', 'acme', '--json']);
    t.match(JSON.parse(json.stdout), { org: 'acme', forkPolicy: 'ignore', effective: { forkPolicy: 'ignore' } });

    for (const [args, message] of [
      [['--org', 'acme', '--fork-policy', 'reject'], /"forkPolicy": "reject" was removed in 0\.9: use "ignore"/],
      [['--org', 'acme', '--fork-policy', 'block'], /forkPolicy.*run, ignore or unset/],
      [['--org', 'acme'], /name a setting/],
      [['--org', 'bad/org', '--fork-policy', 'run'], /org id "bad\/org" is not valid/],
      [['--fork-policy', 'run'], /org/],
      [['--org', 'acme', '--member-override', 'alice=trusted'], /member-override/],
    ] as Array<[string[], RegExp]>) {
      const refused = await run(['org-settings', 'set', ...args]);
      t.not(refused.code, 0, args.join(' '));
      t.match(refused.stderr, message, args.join(' '));
    }
    t.same(await policyRow(), { fork_policy: 'ignore' }, 'refusals changed nothing');

    const unset = await run(['org-settings', 'set', '--org', 'acme', '--fork-policy', 'unset', '--json']);
    t.equal(unset.code, 0, unset.stderr);
    t.match(JSON.parse(unset.stdout), { forkPolicy: null, effective: { forkPolicy: 'run' } });
    t.same(await policyRow(), { fork_policy: null });
  });
});
