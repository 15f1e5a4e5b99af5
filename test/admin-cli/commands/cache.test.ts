// svc-admin cache list / purge / purge-legacy in-process (runCli) against a real database and a
// real filesystem storage directory.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { isLegacyCacheKey } from '../../../kernel/orchestrator/caches/index.ts';
import { migrate, sql } from '../../../kernel/services/db/index.ts';
import { FilesystemStorage } from '../../../plugins/storage/filesystem/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');

t.test('legacy layout rules', async (t) => {
  for (const key of ['source/org-1/abc.tar.gz', 'source/v1/org/x.hash', 'deps/npm-abc.tar.gz', 'sources/a/b', 'deps-cache/x', 'user-cache/org/k.tar', 'caches/x', 'abc.tar.gz', 'def.hash']) {
    t.ok(isLegacyCacheKey(key), `${key} is legacy`);
  }
  for (const key of ['source/v2/org/abc.tar.gz', 'deps/linux-x64/h.tar.gz', 'cache/org/shared/x.tar', 'event-log/org/d.json.gz', 'remote-runs/x.tar.gz', 'notes.txt', 'overlays/a']) {
    t.notOk(isLegacyCacheKey(key), `${key} is not legacy`);
  }
});

t.test('list, purge and purge-legacy', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const dir = await mkdtemp(join(tmpdir(), 'svc-admin-cache-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const root = join(dir, 'storage');
    const storage = new FilesystemStorage({ root });
    await storage.init();
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url, SVC_STORAGE_TYPE: 'filesystem', SVC_STORAGE_FS_PATH: root, SVC_DATA_DIR: join(dir, 'data') };
    const run = (...args: string[]) => runCli(BIN, ['cache', ...args], { env, cwd: dir });

    const runId = randomUUID();
    const entries = [
      { org: 'org-1', scope: 'shared', key: 'k1' },
      { org: 'org-1', scope: `iso/${runId}`, key: 'k2' },
      { org: 'org-2', scope: 'shared', key: 'k3' },
    ];
    for (const e of entries) {
      const objectKey = `cache/${e.org}/${e.scope}/${e.key}.tar`;
      await storage.put(objectKey, Buffer.from(e.key));
      await db.pool.query(sql.unsafe`
        INSERT INTO user_cache_entries (id, org_id, scope, key, object_key, tar_hash, size_bytes)
        VALUES (${randomUUID()}, ${e.org}, ${e.scope}, ${e.key}, ${objectKey}, 'h', 2)`);
    }
    await storage.put('source/v2/org-1/d.tar.gz', Buffer.from('src'));
    await db.pool.query(sql.unsafe`
      INSERT INTO build_cache_entries (pointer_key, kind, org_id, pointer, digest, object_key, size_bytes)
      VALUES ('source/v2/org-1/c.hash', 'source', 'org-1', 'c', 'd', 'source/v2/org-1/d.tar.gz', 3)`);

    const listed = await run('list', '--json');
    t.equal(listed.code, 0, listed.stderr);
    const all = (JSON.parse(listed.stdout) as { entries: Array<{ kind: string; org: string; key: string }> }).entries;
    t.same(all.map((e) => `${e.kind}:${e.org}:${e.key}`).sort(), ['source:org-1:c', 'user:org-1:k1', 'user:org-1:k2', 'user:org-2:k3']);
    const org2 = JSON.parse((await run('list', '--org', 'org-2', '--json')).stdout) as { entries: Array<{ key: string }> };
    t.same(org2.entries.map((e) => e.key), ['k3']);
    t.match((await run('list')).stdout, /user\s+org-1\s+shared/);

    // Bad input changes nothing.
    t.match(await run('purge', '--org', 'org-1', '--scope', 'nope'), { code: 1, stderr: /SVC_ERR_CACHE_SCOPE_INVALID/ });
    t.match(await run('purge', '--org', '../etc'), { code: 1, stderr: /SVC_ERR_CACHE_ORG_INVALID/ });
    t.equal((await run('purge')).code, 2, '--org is required');
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM user_cache_entries`)), 3);

    const purged = await run('purge', '--org', 'org-1', '--scope', 'shared', '--json');
    t.equal(purged.code, 0, purged.stderr);
    t.match(JSON.parse(purged.stdout), { entries: 1, uploads: 0, org: 'org-1', scope: 'shared' });
    t.equal(await storage.head('cache/org-1/shared/k1.tar'), null, 'object deleted');
    t.ok(await storage.head(`cache/org-1/iso/${runId}/k2.tar`), 'other scope kept');
    t.match((await run('purge', '--org', 'org-1')).stdout, /Purged 1 user cache entries/);
    t.same(await db.pool.anyFirst(sql.unsafe`SELECT key FROM user_cache_entries`), ['k3'], 'other orgs untouched');

    // Legacy objects.
    for (const key of ['source/org-1/old.tar.gz', 'deps/npm-old.tar.gz', 'user-cache/org-1/x.tar', 'old.hash']) await storage.put(key, Buffer.from('legacy'));
    await storage.put('event-log/org-1/d.json.gz', Buffer.from('payload'));
    await storage.put('remote-runs/overlay.tar.gz', Buffer.from('overlay'));
    const dry = await run('purge-legacy', '--dry-run', '--json');
    t.equal(dry.code, 0, dry.stderr);
    const dryOut = JSON.parse(dry.stdout) as { dryRun: boolean; deleted: number; objects: Array<{ key: string }> };
    t.same(dryOut.objects.map((o) => o.key).sort(), ['deps/npm-old.tar.gz', 'old.hash', 'source/org-1/old.tar.gz', 'user-cache/org-1/x.tar']);
    t.equal(dryOut.deleted, 0);
    t.ok(await storage.head('old.hash'), 'dry run deletes nothing');
    const real = await run('purge-legacy');
    t.equal(real.code, 0, real.stderr);
    t.match(real.stdout, /Deleted 4 legacy cache objects/);
    t.equal(await storage.head('source/org-1/old.tar.gz'), null);
    for (const key of ['event-log/org-1/d.json.gz', 'remote-runs/overlay.tar.gz', 'source/v2/org-1/d.tar.gz', 'cache/org-2/shared/k3.tar']) {
      t.ok(await storage.head(key), `${key} kept`);
    }
  });
});
