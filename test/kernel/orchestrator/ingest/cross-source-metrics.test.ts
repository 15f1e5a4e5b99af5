// Cross-source (organization-wide) metrics where they happen, against real PostgreSQL, the real
// ingest pipeline and filesystem storage: svc_cross_source_fanout_size observed for every
// matched event (zero matches included, labelled by event), and
// svc_cross_source_errors_total{reason="bundle_missing"} when an org-wide run's job is dispatched
// while the workflow repository's bundle (its source cache entry) is missing.
import t from 'tap';
import { buildJobDispatch, loadDispatchRow } from '../../../../kernel/orchestrator/dispatch/message.ts';
import { sourceObjectKey, sourcePointerKey } from '../../../../kernel/orchestrator/caches/keys.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import type { SvcMetrics } from '../../../../kernel/services/metrics.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { sampleOf } from '../../../fixtures/prom-text.ts';
import { delivery, jobsOfRun, makeHarness } from './harness.ts';

async function sample(metrics: SvcMetrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleOf(await metrics.text(), name, labels) ?? 0;
}

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { source, secret } = await h.addSource();
  const libSha = 'd1'.repeat(20);
  const appSha = 'd2'.repeat(20);
  const audit = workflow('audit', [trig.push({ repositories: ['acme/*'] })]);
  h.forge.putLock(libSha, [audit]);

  await t.test('fan-out size: observed for an event nothing matches, labelled by event', async (t) => {
    const before = { count: await sample(h.metrics, 'svc_cross_source_fanout_size_count', { event: 'push' }), sum: await sample(h.metrics, 'svc_cross_source_fanout_size_sum', { event: 'push' }) };
    const o = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: appSha }), { secret }));
    t.equal(o.status, 'no_lock_file', 'nothing matched');
    t.equal(await sample(h.metrics, 'svc_cross_source_fanout_size_count', { event: 'push' }), before.count + 1, 'observed once');
    t.equal(await sample(h.metrics, 'svc_cross_source_fanout_size_sum', { event: 'push' }), before.sum, 'with size 0');
    t.equal(await sample(h.metrics, 'svc_cross_source_fanout_size_bucket', { event: 'push', le: '0' }), before.count + 1, 'in the 0 bucket');
  });

  let orgWideRun = '';
  await t.test('fan-out size: one organization-wide match counts 1', async (t) => {
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload({ after: libSha, repository: 'acme/lib' }), { secret }))).status, 'matched', 'the workflow repository registers');
    await db.pool.query(sql.unsafe`update sources set org_wide_workflow_repositories = '{acme/lib}', org_wide_source_repositories = '{*}' where id = ${source.id}`);
    h.pipeline.sources.clear();
    const sumBefore = await sample(h.metrics, 'svc_cross_source_fanout_size_sum', { event: 'push' });
    const o = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: appSha }), { secret }));
    t.equal(o.status, 'matched');
    t.equal(o.runIds.length, 1);
    orgWideRun = o.runIds[0]!;
    t.equal(await sample(h.metrics, 'svc_cross_source_fanout_size_sum', { event: 'push' }), sumBefore + 1);
  });

  await t.test('bundle_missing: an org-wide job dispatched with its workflow bundle missing, not once it is there', async (t) => {
    const jobs = (await db.pool.any(sql.unsafe`select id::text as id, kind from jobs where run_id = ${orgWideRun} order by kind`)) as unknown as Array<{ id: string; kind: string }>;
    const work = jobs.find((j) => j.kind === 'job');
    const build = jobs.find((j) => j.kind === 'build');
    t.ok(work, 'the run has a job');
    const options = { pool: db.pool, storage: h.storage, sourceAuth: undefined, logger: db.logger, agentOs: 'linux', agentArch: 'x64', metrics: h.metrics };
    const missing = () => sample(h.metrics, 'svc_cross_source_errors_total', { reason: 'bundle_missing' });
    t.equal(await missing(), 0);

    if (build !== undefined) {
      await buildJobDispatch((await loadDispatchRow(db.pool, build.id))!, options);
      t.equal(await missing(), 0, 'the build job that makes the bundle is not an error');
    }
    const row = (await loadDispatchRow(db.pool, work!.id))!;
    t.equal(row.workflow_repository, 'acme/lib');
    t.equal(row.repository, 'acme/app');
    const first = await buildJobDispatch(row, options);
    t.equal(first.sourceTarUrl, null, 'no bundle to hand out');
    t.equal(await missing(), 1, 'counted at dispatch');

    // The bundle committed (as a build job's cache.upload.complete does): no longer missing.
    await h.storage.put(sourceObjectKey('acme', 'bundle-digest-1'), Buffer.from('tarball'));
    await h.storage.put(sourcePointerKey('acme', row.content_hash), Buffer.from('bundle-digest-1'));
    const second = await buildJobDispatch(row, options);
    t.ok(second.sourceTarUrl, 'the bundle is handed out');
    t.equal(await missing(), 1, 'not counted again');

    // A run of the repository's own workflow with no source cache is an ordinary miss.
    h.forge.putLock('d3'.repeat(20), [workflow('own', [trig.push()])]);
    await db.pool.query(sql.unsafe`update sources set org_wide_workflow_repositories = '{}' where id = ${source.id}`);
    h.pipeline.sources.clear();
    const own = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: 'd3'.repeat(20), ref: 'refs/heads/own' }), { secret }));
    t.equal(own.status, 'matched');
    const ownJob = (await jobsOfRun(db, own.runIds[0]!)).length;
    t.ok(ownJob >= 1);
    const ownRows = (await db.pool.any(sql.unsafe`select id::text as id from jobs where run_id = ${own.runIds[0]!} and kind = 'job'`)) as unknown as Array<{ id: string }>;
    const ownDispatch = await buildJobDispatch((await loadDispatchRow(db.pool, ownRows[0]!.id))!, options);
    t.equal(ownDispatch.sourceTarUrl, null);
    t.equal(await missing(), 1, 'a same-repository run is not a cross-source error');
  });
});
