// Step 13 with a real provider: the `git` provider's readFile against a real git remote decides
// the match. A workflow requiring `Dockerfile` to contain "FROM" runs at a commit where it does
// and is dropped (with the reason on the record) at a commit where it does not; a `file-absent`
// requirement is read at the event's commit, not the branch head.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildLock, serializeLock } from '../../../../workflow/lock/lock-file.ts';
import { createPluginHost } from '../../../../core/plugins/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { notifyJobsQueued } from '../../../../kernel/orchestrator/dispatch/notify.ts';
import { createIngest } from '../../../../kernel/orchestrator/ingest/pipeline.ts';
import { createSource } from '../../../../kernel/orchestrator/sources/store.ts';
import { migrate, sql } from '../../../../kernel/services/db/index.ts';
import { createMetrics } from '../../../../kernel/services/metrics.ts';
import { gitProvider } from '../../../../plugins/providers/git/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { createGitRemote } from '../../../fixtures/git-repos.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { delivery, deliveryRow } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: db.logger });
  const cacheDir = await mkdtemp(join(tmpdir(), 'svc-requires-'));
  t.teardown(() => rm(cacheDir, { recursive: true, force: true }));
  const metrics = createMetrics({ defaultMetrics: false });
  const host = createPluginHost({ logger: db.logger, metrics: metrics.registry, config: { 'provider:git': { cacheDir } } });
  await host.signInAll({ builtIns: [gitProvider] });
  t.teardown(() => host.close());
  const masterKey = randomBytes(32);
  const remote = await createGitRemote(t);
  const { source, secret } = await createSource(db.pool, masterKey, { orgId: 'acme', providerKind: 'git', settings: { remoteUrl: remote.url, repository: 'acme/app' } });
  const pipeline = createIngest({
    pool: db.pool,
    logger: db.logger,
    metrics,
    host,
    masterKeys: [{ name: 'current', key: masterKey }],
    config: { lockfileCache: { max: 10, ttlMs: 60_000 }, eventLog: { maxPayloadBytes: 1 << 20 } },
    nodeId: 'node-r',
    notifyJobsQueued,
  });
  const lock = serializeLock(
    buildLock({
      source: '.svc/workflows/*.ts#default',
      workflows: [
        workflow('docker', [trig.push({ requires: [{ type: 'file-contains', path: 'Dockerfile', text: 'FROM' }] })]),
        workflow('no-skip-marker', [trig.push({ requires: [{ type: 'file-absent', path: 'SKIP' }] })]),
      ],
    }),
  );
  const send = (sha: string) =>
    pipeline.ingestDelivery(
      delivery(pushPayload({ after: sha, ref: 'refs/heads/topic' }), { secret, routingKey: `git:${source.id}`, providerKind: 'git', headers: { 'x-provider-hook-installation-target-id': source.id } }),
    );
  const runsOf = async (runIds: string[]) =>
    (await Promise.all(runIds.map(async (id) => ((await db.pool.one(sql.unsafe`select workflow from runs where id = ${id}`)) as { workflow: string }).workflow))).sort();

  const good = await remote.commit({ '.svc/svc.lock.json': lock, Dockerfile: 'FROM scratch\n' }, 'dockerfile');
  const bad = await remote.commit({ Dockerfile: '# nothing here\n', SKIP: '' }, 'no FROM, skip marker');
  await remote.push('main:topic');

  await t.test('the file at the event commit decides', async (t) => {
    const ok = await send(good);
    t.equal(ok.status, 'matched');
    t.same(await runsOf(ok.runIds), ['docker', 'no-skip-marker'], 'both requirements met at the first commit');

    const d = await send(bad);
    t.equal(d.status, 'no_match', 'neither is met at the second commit');
    const row = await deliveryRow(db, d.deliveryId);
    const dropped = row!.steps.filter((s) => s.step === 'requires' && s.outcome === 'dropped').map((s) => s.detail ?? '');
    t.equal(dropped.length, 2);
    t.match(dropped.join('\n'), /docker: .*Dockerfile/);
    t.match(dropped.join('\n'), /no-skip-marker: .*SKIP/);
  });
});
