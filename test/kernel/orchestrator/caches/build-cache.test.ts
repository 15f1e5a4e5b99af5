// Source and dependency build caches through a real orchestrator: the agent running a build
// job asks for a pre-signed PUT, uploads, completes; the pointer appears and lookup* finds it.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { lookupDepsCache, lookupSourceCache, sweepExpiredBuildEntries } from '../../../../kernel/orchestrator/caches/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { fetchText, protocolError, put, startCacheNode } from './harness.ts';

const contentHash = 'c'.repeat(64);
const lockfileHash = `npm:${'d'.repeat(64)}`;
const digest = `sha256:${'1'.repeat(64)}`;
const depsHash = `sha256:${'2'.repeat(64)}`;

t.test('build job uploads source and deps; pointers written; lookups find them; others refused', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startCacheNode(t, db.url);
    const ctx = node.orch.ctx;
    const builder = await TestAgent.online({ url: node.url, agentId: 'builder', labels: ['builder'] });
    const other = await TestAgent.online({ url: node.url, agentId: 'other', labels: ['other'] });
    t.teardown(async () => {
      await builder.close();
      await other.close();
    });

    t.equal(await lookupSourceCache(ctx, 'org-1', contentHash), null, 'miss before the build');
    const run = await insertRun(db.pool, { contentHash, lockfileHash, jobs: [{ name: 'build', kind: 'build', runsOn: ['builder'] }, { name: 'plain', runsOn: ['other'] }] });
    const jobId = run.jobs['build']!.id;
    await builder.waitFor('job.dispatch', (m) => m.jobId === jobId);
    const plainId = run.jobs['plain']!.id;
    await other.waitFor('job.dispatch', (m) => m.jobId === plainId);

    // Refusals first: nothing they do may write a pointer.
    const ask = async (agent: TestAgent, body: Record<string, unknown>) => {
      const requestId = randomUUID();
      agent.sendRaw({ type: 'cache.upload.request', requestId, ...body });
      return agent.waitFor('cache.upload.response', (m) => m.requestId === requestId);
    };
    t.equal((await ask(other, { jobId, cacheType: 'source', key: digest })).error?.code, 'SVC_ERR_CACHE_JOB_NOT_OWNED', 'an agent not running the job is refused');
    t.equal((await ask(builder, { jobId: randomUUID(), cacheType: 'source', key: digest })).error?.code, 'SVC_ERR_CACHE_JOB_UNKNOWN');
    t.equal((await ask(builder, { jobId, cacheType: 'source', key: '../escape' })).error?.code, 'SVC_ERR_CACHE_KEY_INVALID', 'a path-like key is refused');
    t.equal((await ask(builder, { jobId, cacheType: 'source', key: 'a/b' })).error?.code, 'SVC_ERR_CACHE_KEY_INVALID');
    t.equal((await ask(other, { jobId: plainId, cacheType: 'source', key: digest })).error?.code, 'SVC_ERR_CACHE_NOT_BUILD_JOB', 'a non-build job cannot upload build caches');
    other.sendRaw({ type: 'cache.upload.complete', jobId, cacheType: 'source', key: digest });
    await protocolError(other, 'SVC_ERR_CACHE_JOB_NOT_OWNED');
    builder.sendRaw({ type: 'cache.upload.complete', jobId, cacheType: 'source', key: digest });
    await protocolError(builder, 'SVC_ERR_CACHE_OBJECT_MISSING');
    t.equal(await node.storage.head(`source/v2/org-1/${contentHash}.hash`), null, 'no pointer without the object');

    // The real flow.
    const source = await ask(builder, { jobId, cacheType: 'source', key: digest });
    t.equal(source.error, undefined);
    await put(source.url as string, 'source tarball');
    builder.sendRaw({ type: 'cache.upload.complete', jobId, cacheType: 'source', key: digest });
    const pointer = `source/v2/org-1/${contentHash}.hash`;
    // The pointer is written before the entry's row: the upload is committed once both are there.
    const committed = async (kind: string, at: string) =>
      (await node.storage.head(at)) !== null && (await db.pool.maybeOne(sql.unsafe`SELECT 1 AS one FROM build_cache_entries WHERE kind = ${kind}`)) !== null ? true : undefined;
    await until('source pointer and entry', () => committed('source', pointer));
    t.ok(await node.storage.head(`source/v2/org-1/${digest}.tar.gz`), 'tarball at source/v2/<org>/<digest>.tar.gz');
    const hit = await lookupSourceCache(ctx, 'org-1', contentHash);
    t.equal(hit?.digest, digest);
    t.equal(await fetchText(hit!.url), 'source tarball', 'lookup URL is a working pre-signed GET');
    t.equal(await lookupSourceCache(ctx, 'org-2', contentHash), null, 'source caches are per org');

    const deps = await ask(builder, { jobId, cacheType: 'dep', key: depsHash });
    await put(deps.url as string, 'deps tarball');
    builder.sendRaw({ type: 'cache.upload.complete', jobId, cacheType: 'dep', key: depsHash, depsHash: 'something-else' });
    await protocolError(builder, 'SVC_ERR_CACHE_DEPS_HASH_MISMATCH');
    builder.sendRaw({ type: 'cache.upload.complete', jobId, cacheType: 'dep', key: depsHash, depsHash });
    const depsPointer = `deps/linux-x64/${lockfileHash}.hash`;
    await until('deps pointer and entry', () => committed('dep', depsPointer));
    const depsHit = await lookupDepsCache(ctx, 'linux-x64', lockfileHash);
    t.equal(depsHit?.digest, depsHash);
    t.equal(await fetchText(depsHit!.url), 'deps tarball');
    t.equal(await lookupDepsCache(ctx, 'linux-arm64', lockfileHash), null, 'deps caches are per platform-arch');

    const metrics = await ctx.metrics.text();
    t.match(metrics, /svc_orch_build_duration_seconds_count 1\b/, 'build duration recorded once');
    t.match(metrics, /svc_orch_source_cache_hits_total 1\b/);
    t.match(metrics, /svc_orch_source_cache_misses_total 2\b/);
    t.match(metrics, /svc_orch_dep_cache_hits_total 1\b/);
    t.match(metrics, /svc_orch_dep_cache_misses_total 1\b/);
    const rows = await db.pool.any(sql.unsafe`SELECT kind, pointer, digest, job_id::text AS job_id FROM build_cache_entries ORDER BY kind DESC`);
    t.same((rows as readonly Record<string, unknown>[]).map((r) => [r['kind'], r['pointer'], r['digest']]), [['source', contentHash, digest], ['dep', lockfileHash, depsHash]]);

    // The job over: its agent can no longer upload.
    builder.jobStatus(jobId, 'completed');
    await until('job completed', async () => ((await db.pool.oneFirst(sql.unsafe`SELECT status FROM jobs WHERE id = ${jobId}`)) === 'completed' ? true : undefined));
    t.equal((await ask(builder, { jobId, cacheType: 'source', key: digest })).error?.code, 'SVC_ERR_CACHE_JOB_INACTIVE');

    // TTL: an entry not read for longer than the TTL loses its pointer and tarball.
    await db.pool.query(sql.unsafe`UPDATE build_cache_entries SET last_read_at = now() - interval '31 days' WHERE kind = 'source'`);
    t.equal(await sweepExpiredBuildEntries(node.options, 30), 1);
    t.equal(await node.storage.head(pointer), null, 'pointer gone');
    t.equal(await node.storage.head(`source/v2/org-1/${digest}.tar.gz`), null, 'tarball gone');
    t.equal(await lookupSourceCache(ctx, 'org-1', contentHash), null);
    t.ok(await lookupDepsCache(ctx, 'linux-x64', lockfileHash), 'the fresh deps entry stays');
    await t.rejects(lookupSourceCache(ctx, 'org-1', '../x'), { code: 'SVC_ERR_CACHE_KEY_INVALID' });
  });
});
