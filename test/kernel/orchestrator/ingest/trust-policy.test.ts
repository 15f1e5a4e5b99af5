// The org trust policy applied by the trust step (docs/trust-policy.md), on real PostgreSQL: a
// source without its own fork policy follows its org's `forkPolicy` (fork deliveries ignored
// under `ignore`, run again once cleared); a source's own value wins over the org's in both
// directions; same-repository pull requests are never affected. A change reaches the pipeline's
// cache by NOTIFY (watchTrustPolicies), as on every node.
import t from 'tap';
import { createListener } from '../../../../kernel/services/db/index.ts';
import { watchTrustPolicies } from '../../../../kernel/orchestrator/trust-policy/cache.ts';
import { patchTrustPolicy } from '../../../../kernel/orchestrator/trust-policy/store.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pullRequestPayload, SHA_A, SHA_B } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { until } from '../../../fixtures/runs.ts';
import { delivery, deliveryRow, makeHarness } from './harness.ts';

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const inherits = await h.addSource();
  const ownRun = await h.addSource({ targetId: '8', forkPolicy: 'run' });
  const ownIgnore = await h.addSource({ targetId: '9', forkPolicy: 'ignore' });
  t.equal(inherits.source.forkPolicy, null, 'a source created without a fork policy follows its org');
  t.equal(ownRun.source.forkPolicy, 'run');
  h.forge.putLock(SHA_B, [workflow('pr-ci', [trig.pr()])]);
  h.forge.putLock(SHA_A, [workflow('pr-ci', [trig.pr()])]);
  const listener = await createListener({ url: db.url, logger: db.logger });
  t.teardown(() => listener.close());
  await watchTrustPolicies(listener, h.pipeline.trustPolicies, db.logger);

  const fork = (routingKey: string, secret: string) =>
    h.pipeline.ingestDelivery(delivery(pullRequestPayload({ headRepo: 'mallory/app' }), { secret, routingKey, eventType: 'pull_request' }));
  const sameRepo = (routingKey: string, secret: string) => h.pipeline.ingestDelivery(delivery(pullRequestPayload(), { secret, routingKey, eventType: 'pull_request' }));
  const setOrg = async (forkPolicy: 'run' | 'ignore' | null) => {
    await patchTrustPolicy(db.pool, 'acme', { forkPolicy }, 'test');
    // The NOTIFY drops the cached policy: the next read sees the new value.
    await until(`org policy ${forkPolicy} seen by the pipeline`, async () => ((await h.pipeline.trustPolicies.get('acme')).forkPolicy === forkPolicy ? true : undefined));
  };

  await t.test('no org policy: forks run for sources without their own policy', async (t) => {
    const o = await fork('forge:7', inherits.secret);
    t.equal(o.status, 'matched');
    t.equal(o.runIds.length, 1);
    t.equal((await fork('forge:9', ownIgnore.secret)).status, 'ignored_fork', "a source's own ignore applies");
  });

  await t.test('org forkPolicy ignore: fork deliveries of inheriting sources are ignored', async (t) => {
    await setOrg('ignore');
    const d = delivery(pullRequestPayload({ headRepo: 'mallory/app' }), { secret: inherits.secret, eventType: 'pull_request' });
    const o = await h.pipeline.ingestDelivery(d);
    t.same([o.result, o.status, o.runIds], ['accepted', 'ignored_fork', []]);
    t.match(o.message, /pull request from fork mallory\/app and org acme's trust policy fork policy is ignore/);
    t.equal((await deliveryRow(db, d.deliveryId))?.status, 'ignored_fork', 'recorded');
    t.equal((await sameRepo('forge:7', inherits.secret)).status, 'matched', 'same-repository pull requests still run');
    t.equal((await fork('forge:8', ownRun.secret)).status, 'matched', "a source's own run wins over the org's ignore");
  });

  await t.test("org forkPolicy run does not override a source's ignore", async (t) => {
    await setOrg('run');
    t.equal((await fork('forge:7', inherits.secret)).status, 'matched');
    const o = await fork('forge:9', ownIgnore.secret);
    t.equal(o.status, 'ignored_fork');
    t.match(o.message, /the source's fork policy is ignore/);
  });

  await t.test('cleared (null): back to the default, run', async (t) => {
    await setOrg('ignore');
    t.equal((await fork('forge:7', inherits.secret)).status, 'ignored_fork');
    await setOrg(null);
    t.equal((await fork('forge:7', inherits.secret)).status, 'matched');
  });
});
