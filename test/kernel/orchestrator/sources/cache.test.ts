// The opened-source cache drops its copies when the sources table changes in another process
// (rotation started or finished, removal): the change NOTIFYs `svc_sources_changed` in its
// transaction and `watchSources` clears the cache. Without the notification the cache would keep
// accepting a retired secret until its TTL.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../../kernel/orchestrator/app.ts';
import { SourceCache, watchSources } from '../../../../kernel/orchestrator/sources/cache.ts';
import { createSource, removeSource, rotateSourceSecret } from '../../../../kernel/orchestrator/sources/store.ts';
import { createListener, migrate } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';

await eachDatabase(t, async (t, db) => {
  await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: db.logger });
  const key = randomBytes(32);
  const cache = new SourceCache(db.pool, [{ name: 'current', key }], { ttlMs: 600_000 });
  const listener = await createListener({ url: db.url, logger: db.logger });
  t.teardown(() => listener.close());
  let clears = 0;
  const stop = await watchSources(listener, () => {
    clears += 1;
    cache.clear();
  });
  t.teardown(stop);
  // Polled until true; the 60 s bound is a hang guard only.
  const until = async (what: string, probe: () => boolean) => {
    for (const deadline = Date.now() + 60_000; !probe() && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    t.ok(probe(), what);
  };

  const { source, secret } = await createSource(db.pool, key, { orgId: 'acme', providerKind: 'forge', targetId: '1' });
  await until('creation notified', () => clears >= 1);
  const first = await cache.get('acme', 'forge:1');
  t.ok(first.ok && !first.cached);
  const again = await cache.get('acme', 'forge:1');
  t.ok(again.ok && again.cached, 'served from memory');
  t.same(again.ok ? again.source.secrets : null, [secret]);
  t.equal((await cache.getById(source.id))?.id, source.id);
  t.same((await cache.listOrg('acme')).map((s) => s.id), [source.id]);

  const before = clears;
  const { secret: next } = await rotateSourceSecret(db.pool, key, source.id);
  await until('rotation notified', () => clears > before);
  const rotating = await cache.get('acme', 'forge:1');
  t.ok(rotating.ok && !rotating.cached, 'read again after the rotation');
  t.same(rotating.ok ? rotating.source.secrets : null, [next, secret], 'both secrets during the rotation');

  const mid = clears;
  await rotateSourceSecret(db.pool, key, source.id, { finish: true });
  await until('finish notified', () => clears > mid);
  const finished = await cache.get('acme', 'forge:1');
  t.same(finished.ok ? finished.source.secrets : null, [next], 'the old secret is gone at once, not after the TTL');

  const late = clears;
  await removeSource(db.pool, source.id);
  await until('removal notified', () => clears > late);
  t.same(await cache.get('acme', 'forge:1'), { ok: false, reason: 'unknown' }, 'a removed source is unknown at once');
  t.equal(await cache.getById(source.id), null);

  // A read that started before a clear is not cached (it may hold the old row).
  const version = cache.version;
  cache.clear();
  t.equal(cache.version, version + 1);
});
