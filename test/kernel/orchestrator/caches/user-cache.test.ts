// The user cache through a real orchestrator and agents on real sockets: two-phase saves,
// immutable keys, restore-key resolution, trust scopes, quota eviction, TTL and bad input.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sweepExpiredUserEntries, sweepStaleUploads } from '../../../../kernel/orchestrator/caches/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, type TestDb } from '../../../fixtures/db.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { entryCount, fetchText, protocolError, put, restore, save, sha256, startCacheNode, type CacheNode } from './harness.ts';

/** An agent with its own label and one running job on it (trusted push, or an untrusted PR). */
async function agentWithJob(t: Parameters<Parameters<typeof eachDatabase>[1]>[0], node: CacheNode, db: TestDb, name: string, trusted = true) {
  const agent = await TestAgent.online({ url: node.url, agentId: name, labels: [name] });
  t.teardown(() => agent.close());
  const run = await insertRun(db.pool, { trustTier: trusted ? 'trusted' : 'unknown', jobs: [{ name: 'job', runsOn: [name] }] });
  if (!trusted) await db.pool.query(sql.unsafe`UPDATE runs SET subject_kind = 'pull_request' WHERE id = ${run.runId}`);
  const jobId = run.jobs['job']!.id;
  await agent.waitFor('job.dispatch', (m) => m.jobId === jobId);
  return { agent, jobId, runId: run.runId };
}

t.test('save then restore; immutable keys; crashed upload never commits; bad input', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startCacheNode(t, db.url);
    const { agent, jobId } = await agentWithJob(t, node, db, 'a1');

    t.equal(await save(db.pool, agent, jobId, 'node-modules-v1', 'tar one'), 'committed');
    const hit = await restore(agent, jobId, 'node-modules-v1');
    t.match(hit, { hit: true, matchedKey: 'node-modules-v1', tarHash: sha256('tar one') });
    t.equal(await fetchText(hit.downloadUrl as string), 'tar one', 'download URL serves the committed object');
    const row = await db.pool.one(sql.unsafe`SELECT scope, object_key, size_bytes::int AS size FROM user_cache_entries`);
    t.same(row, { scope: 'shared', object_key: `cache/org-1/shared/${sha256('node-modules-v1')}.tar`, size: 7 });
    t.same((await node.storage.list('cache/org-1/tmp/')).objects, [], 'temporary object deleted after the commit');

    t.equal(await save(db.pool, agent, jobId, 'node-modules-v1', 'tar two'), 'skip', 'an existing key is immutable');
    t.equal(await fetchText((await restore(agent, jobId, 'node-modules-v1')).downloadUrl as string), 'tar one');

    // Crashed upload: request and PUT, never complete.
    const requestId = randomUUID();
    agent.sendRaw({ type: 'cache.user.save.request', jobId, requestId, key: 'crashed' });
    const response = await agent.waitFor('cache.user.save.response', (m) => m.requestId === requestId);
    await put(response.uploadUrl as string, 'half');
    t.match(await restore(agent, jobId, 'crashed'), { hit: false }, 'an uncompleted save is not restorable');
    t.equal(await entryCount(db.pool, sql.fragment`key = 'crashed'`), 0);
    t.equal((await node.storage.list('cache/org-1/tmp/')).objects.length, 1, 'temporary object waits for the sweeper');
    t.equal(await sweepStaleUploads(node.options, 3600), 0, 'a fresh upload is left alone');
    t.equal(await sweepStaleUploads(node.options, 0), 1, 'a stale upload is swept');
    t.same((await node.storage.list('cache/org-1/tmp/')).objects, [], 'its temporary object is deleted');
    agent.sendRaw({ type: 'cache.user.save.complete', jobId, requestId, key: 'crashed', tarHash: sha256('half'), sizeBytes: 4 });
    await protocolError(agent, 'SVC_ERR_CACHE_UPLOAD_UNKNOWN', requestId);
    t.equal(await entryCount(db.pool, sql.fragment`key = 'crashed'`), 0, 'a late complete of a swept upload commits nothing');

    // Two saves of one key racing: both get URLs, both complete; exactly one commits.
    const racers = [randomUUID(), randomUUID()];
    for (const id of racers) agent.sendRaw({ type: 'cache.user.save.request', jobId, requestId: id, key: 'raced' });
    for (const [i, id] of racers.entries()) {
      const r = await agent.waitFor('cache.user.save.response', (m) => m.requestId === id);
      t.equal(r.skip, false);
      await put(r.uploadUrl as string, `racer ${i}`);
    }
    for (const [i, id] of racers.entries()) agent.sendRaw({ type: 'cache.user.save.complete', jobId, requestId: id, key: 'raced', tarHash: sha256(`racer ${i}`), sizeBytes: 7 });
    await until('both completes handled', async () => ((await db.pool.exists(sql.unsafe`SELECT 1 FROM user_cache_uploads WHERE key = 'raced'`)) ? undefined : true));
    const raced = await restore(agent, jobId, 'raced');
    t.ok(raced.tarHash === sha256('racer 0') || raced.tarHash === sha256('racer 1'));
    t.equal(await fetchText(raced.downloadUrl as string), raced.tarHash === sha256('racer 0') ? 'racer 0' : 'racer 1', 'the object matches the committed row');
    t.equal(await entryCount(db.pool, sql.fragment`key = 'raced'`), 1);
    await db.pool.query(sql.unsafe`DELETE FROM user_cache_entries WHERE key = 'raced'`);

    // Bad input: each refused, nothing committed.
    t.equal(await save(db.pool, agent, jobId, 'size-lie', 'twelve bytes', { sizeBytes: 99 }), 'SVC_ERR_CACHE_SIZE_MISMATCH');
    t.equal(await entryCount(db.pool, sql.fragment`key = 'size-lie'`), 0);
    t.same((await node.storage.list('cache/org-1/tmp/')).objects, [], 'the mismatched upload is discarded');
    const unknown = randomUUID();
    agent.sendRaw({ type: 'cache.user.save.complete', jobId, requestId: unknown, key: 'x', tarHash: 'abc', sizeBytes: 1 });
    await protocolError(agent, 'SVC_ERR_CACHE_UPLOAD_UNKNOWN', unknown);
    const mismatch = randomUUID();
    agent.sendRaw({ type: 'cache.user.save.request', jobId, requestId: mismatch, key: 'real-key' });
    const r2 = await agent.waitFor('cache.user.save.response', (m) => m.requestId === mismatch);
    await put(r2.uploadUrl as string, 'data');
    agent.sendRaw({ type: 'cache.user.save.complete', jobId, requestId: mismatch, key: 'other-key', tarHash: sha256('data'), sizeBytes: 4 });
    await protocolError(agent, 'SVC_ERR_CACHE_KEY_MISMATCH', mismatch);
    agent.sendRaw({ type: 'cache.user.save.complete', jobId, requestId: mismatch, key: 'real-key', tarHash: '../bad', sizeBytes: 4 });
    await protocolError(agent, 'SVC_ERR_CACHE_KEY_INVALID', mismatch);
    agent.sendRaw({ type: 'cache.user.save.request', jobId, requestId: mismatch, key: 'real-key' });
    const dup = await agent.waitFor('cache.user.save.response', (m) => m.requestId === mismatch && m.error !== undefined);
    t.equal(dup.error?.code, 'SVC_ERR_CACHE_REQUEST_DUPLICATE');
    t.equal((await restore(agent, jobId, 'bad\u0001key')).error?.code, 'SVC_ERR_CACHE_KEY_INVALID');
    t.equal((await restore(agent, jobId, 'k', ['ok', 'bad\nprefix'])).error?.code, 'SVC_ERR_CACHE_KEY_INVALID');
    t.equal((await restore(agent, randomUUID(), 'k')).error?.code, 'SVC_ERR_CACHE_JOB_UNKNOWN');
    const stranger = await TestAgent.online({ url: node.url, agentId: 'stranger', labels: ['nobody'] });
    t.teardown(() => stranger.close());
    t.equal((await restore(stranger, jobId, 'node-modules-v1')).error?.code, 'SVC_ERR_CACHE_JOB_NOT_OWNED', 'another agent cannot read this job’s cache');
    t.equal(await save(db.pool, stranger, jobId, 'intruder', 'x'), 'SVC_ERR_CACHE_JOB_NOT_OWNED', 'nor write it');
    agent.sendRaw({ type: 'cache.user.save.request', jobId, requestId: randomUUID() });
    await agent.waitFor('protocol.error', (m) => m.error.code === 'SVC_ERR_PROTOCOL_INVALID');
    t.equal(await entryCount(db.pool), 1, 'only the one good entry exists');
  });
});

t.test('restore keys: exact first, then each prefix in order, newest match winning', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startCacheNode(t, db.url);
    const { agent, jobId } = await agentWithJob(t, node, db, 'a2');
    for (const key of ['deps-a-1', 'deps-a-2', 'deps-b-1', 'deps-a%_']) t.equal(await save(db.pool, agent, jobId, key, `body ${key}`), 'committed');
    t.match(await restore(agent, jobId, 'deps-a-1', ['deps-b-']), { hit: true, matchedKey: 'deps-a-1' }, 'exact key beats prefixes');
    t.match(await restore(agent, jobId, 'deps-zzz', ['deps-c-', 'deps-a-']), { hit: true, matchedKey: 'deps-a-2' }, 'newest match of the first matching prefix');
    t.match(await restore(agent, jobId, 'deps-zzz', ['deps-b-', 'deps-a-']), { hit: true, matchedKey: 'deps-b-1' }, 'prefix order beats age');
    t.match(await restore(agent, jobId, 'deps-zzz', ['deps-a-2']), { hit: true, matchedKey: 'deps-a-2' });
    t.match(await restore(agent, jobId, 'deps-zzz', ['deps-a_', 'deps-a%']), { hit: true, matchedKey: 'deps-a%_' }, 'prefixes are literal text (no LIKE wildcards)');
    t.match(await restore(agent, jobId, 'nothing', ['none-']), { hit: false });
    // An object removed behind our back: the entry is dropped and the next candidate used.
    await node.storage.delete(`cache/org-1/shared/${sha256('deps-a%_')}.tar`);
    t.match(await restore(agent, jobId, 'deps-zzz', ['deps-a']), { hit: true, matchedKey: 'deps-a-2' });
    t.equal(await entryCount(db.pool, sql.fragment`key = 'deps-a%_'`), 0);
  });
});

t.test('trusted refs read and write shared only; untrusted refs are isolated to their run', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startCacheNode(t, db.url);
    const trusted = await agentWithJob(t, node, db, 'trusted', true);
    const untrusted = await agentWithJob(t, node, db, 'untrusted', false);

    t.equal(await save(db.pool, untrusted.agent, untrusted.jobId, 'poison', 'evil'), 'committed');
    t.ok(await node.storage.head(`cache/org-1/iso/${untrusted.runId}/${sha256('poison')}.tar`), 'written under iso/<run>');
    t.match(await restore(trusted.agent, trusted.jobId, 'poison', ['poi']), { hit: false }, 'untrusted writes are never visible to trusted reads');
    t.match(await restore(untrusted.agent, untrusted.jobId, 'poison'), { hit: true, tarHash: sha256('evil') }, 'the untrusted run reads its own scope');

    t.equal(await save(db.pool, trusted.agent, trusted.jobId, 'shared-key', 'good'), 'committed');
    t.match(await restore(untrusted.agent, untrusted.jobId, 'shared-key'), { hit: true, tarHash: sha256('good') }, 'untrusted reads see shared');
    t.equal(await save(db.pool, untrusted.agent, untrusted.jobId, 'shared-key', 'evil2'), 'committed', 'the untrusted write goes to its own scope, not a skip');
    t.match(await restore(untrusted.agent, untrusted.jobId, 'shared-key'), { hit: true, tarHash: sha256('evil2') }, 'its own scope first');
    t.match(await restore(trusted.agent, trusted.jobId, 'shared-key'), { hit: true, tarHash: sha256('good') }, 'shared copy untouched');
    const scopes = await db.pool.anyFirst(sql.unsafe`SELECT DISTINCT scope FROM user_cache_entries ORDER BY scope`);
    t.same(scopes, [`iso/${untrusted.runId}`, 'shared']);
  });
});

t.test('quota evicts least recently read first; TTL refreshed on read, expired entries swept', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startCacheNode(t, db.url, { SVC_USER_CACHE_QUOTA_BYTES: '250' });
    const { agent, jobId } = await agentWithJob(t, node, db, 'a3');
    const body = (c: string) => c.repeat(100);
    t.equal(await save(db.pool, agent, jobId, 'a', body('a')), 'committed');
    t.equal(await save(db.pool, agent, jobId, 'b', body('b')), 'committed');
    t.match(await restore(agent, jobId, 'a'), { hit: true }, 'reading a makes b the oldest');
    t.equal(await save(db.pool, agent, jobId, 'c', body('c')), 'committed');
    // save() sees the commit; the orchestrator enforces the quota right after it, so wait for the
    // eviction (on a loaded machine the check can come first). Which entry went is then asserted.
    const left = await until('an entry to be evicted', async () => {
      const keys = await db.pool.anyFirst(sql.unsafe`SELECT key FROM user_cache_entries ORDER BY key`);
      return keys.length < 3 ? keys : undefined;
    });
    t.same(left, ['a', 'c'], 'b evicted');
    t.equal(await until('its object to be deleted', async () => ((await node.storage.head(`cache/org-1/shared/${sha256('b')}.tar`)) === null ? null : undefined)), null, 'its object deleted');
    t.equal(await save(db.pool, agent, jobId, 'huge', 'x'.repeat(300)), 'SVC_ERR_CACHE_TOO_LARGE', 'an entry over the whole quota is refused');
    t.same(await db.pool.anyFirst(sql.unsafe`SELECT key FROM user_cache_entries ORDER BY key`), ['a', 'c'], 'and evicts nothing');

    // TTL (default 30 days): a read inside the TTL refreshes last_read_at.
    await db.pool.query(sql.unsafe`UPDATE user_cache_entries SET last_read_at = now() - interval '29 days' WHERE key = 'a'`);
    t.match(await restore(agent, jobId, 'a'), { hit: true });
    const age = await db.pool.oneFirst(sql.unsafe`SELECT extract(epoch FROM now() - last_read_at)::int FROM user_cache_entries WHERE key = 'a'`);
    t.ok(Number(age) < 60, 'read refreshed last_read_at');
    await db.pool.query(sql.unsafe`UPDATE user_cache_entries SET last_read_at = now() - interval '31 days' WHERE key = 'c'`);
    t.match(await restore(agent, jobId, 'c'), { hit: false }, 'an expired entry is not restored even before the sweep');
    t.equal(await sweepExpiredUserEntries(node.options, 30), 1);
    t.same(await db.pool.anyFirst(sql.unsafe`SELECT key FROM user_cache_entries`), ['a']);
    t.equal(await node.storage.head(`cache/org-1/shared/${sha256('c')}.tar`), null, 'expired object deleted');
    t.equal(await save(db.pool, agent, jobId, 'c', body('C')), 'committed', 'an expired key can be saved again');
  });
});
