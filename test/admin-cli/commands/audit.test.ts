// The audit trail (issue 42 item 4; docs/audit.md) on a real database, svc-admin in-process:
// - every changing svc-admin command writes exactly one record (ok, or refused with the reason),
//   with the OS user as actor; reading commands write none;
// - the table is append-only in the database: UPDATE, DELETE and TRUNCATE are refused by its
//   triggers; only the retention pass deletes, and only rows past its cut-off (timestamps moved
//   by writing records dated in the past);
// - `svc-admin audit list` filters (--actor, --action, --org, --outcome, --since/--until) and
//   prints JSON lines with --json; bad filters are refused.
import { randomBytes, randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { listAudit, purgeAudit, recordAudit } from '../../../kernel/orchestrator/audit/store.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const ME = userInfo().username;

await eachDatabase(t, async (t, db) => {
  const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: randomBytes(32).toString('base64') };
  const admin = async (args: string[], expectCode = 0) => {
    const out = await runCli(BIN, args, { env });
    t.equal(out.code, expectCode, `svc-admin ${args.join(' ')}: ${out.stderr}`);
    return out;
  };
  const count = async () => Number(await db.pool.oneFirst(sql.unsafe`select count(*) from audit_events`));

  await t.test('each changing svc-admin command writes exactly one record; reads write none', async (t) => {
    const source = JSON.parse((await admin(['source', 'add', 'git', '--org', 'acme', '--name', 'app', '--json'])).stdout) as { source: { id: string } };
    const sourceId = source.source.id;
    const adminToken = JSON.parse((await admin(['admin-token', 'create', '--name', 'ops', '--scope', 'audit.read', '--json'])).stdout) as { id: string };
    const agentToken = JSON.parse((await admin(['agent-token', 'create', '--json'])).stdout) as { id: string };
    // Each changing command, and the record it must leave: [argv, action, target, outcome].
    const changes: Array<[string[], string, string | RegExp, 'ok' | 'refused', number?]> = [
      [['source', 'rotate-secret', sourceId], 'source.rotate_secret', `source:${sourceId}`, 'ok'],
      [['source', 'rotate-secret', sourceId, '--finish'], 'source.rotate_secret', `source:${sourceId}`, 'ok'],
      [['source', 'status-webhook', 'set', sourceId, '--url', 'https://hooks.example.test/ci', '--generate-secret'], 'source.status_webhook_set', `source:${sourceId}`, 'ok'],
      [['source', 'status-webhook', 'remove', sourceId], 'source.status_webhook_remove', `source:${sourceId}`, 'ok'],
      [['context', 'create', 'deploy', '--branches', 'main'], 'secret_context.create', 'context:deploy', 'ok'],
      [['context', 'bind', 'deploy', '--org', 'acme'], 'secret_context.bind', 'context:deploy', 'ok'],
      [['context', 'protect', 'deploy', '--wait-timer', '60'], 'secret_context.protect', 'context:deploy', 'ok'],
      [['secret', 'set', 'deploy', 'TOKEN', '--value', 'v-1'], 'secret.set', 'secret:deploy/TOKEN', 'ok'],
      [['secret', 'set', 'nope', 'TOKEN', '--value', 'v-1'], 'secret.set', 'secret:nope/TOKEN', 'refused', 1],
      [['config', 'set', '--seed'], 'config.set', 'config', 'ok'],
      [['config', 'set', 'cache.ttlDays=7'], 'config.set', 'config', 'ok'],
      [['config', 'rollback', '1'], 'config.rollback', 'config:version 1', 'ok'],
      [['signing-key', 'generate'], 'signing_key.generate', /^key:/, 'ok'],
      [['signing-key', 'rotate'], 'signing_key.rotate', /^key:/, 'ok'],
      [['admin-token', 'revoke', adminToken.id], 'admin_token.revoke', `admin-token:${adminToken.id}`, 'ok'],
      [['agent-token', 'revoke', agentToken.id], 'agent_token.revoke', `agent-token:${agentToken.id}`, 'ok'],
      [['source', 'remove', sourceId], 'source.remove', `source:${sourceId}`, 'ok'],
    ];
    for (const [argv, action, target, outcome, code] of changes) {
      const before = await count();
      await admin(argv, code ?? 0);
      t.equal(await count(), before + 1, `${argv.slice(0, 2).join(' ')}: one record`);
      const [last] = await listAudit(db.pool, { limit: 1 });
      t.match(last, { action, target, outcome, actor: { kind: 'operator', name: ME }, via: 'admin' }, `${argv.join(' ')} → ${action} ${outcome}`);
    }
    // The revoke of a key: its kid comes from the listing.
    const kids = (await db.pool.anyFirst(sql.unsafe`select kid from signing_keys where status = 'retiring'`)) as string[];
    const before = await count();
    await admin(['signing-key', 'revoke', '--reason', 'test', '--', kids[0]!]);
    t.equal(await count(), before + 1);
    t.match((await listAudit(db.pool, { limit: 1 }))[0], { action: 'signing_key.revoke', target: `key:${kids[0]}`, detail: 'test', outcome: 'ok' });
    t.match((await listAudit(db.pool, { action: 'secret.set', outcome: 'refused' }))[0]?.detail, /SVC_ERR_SECRETS_CONTEXT_NOT_FOUND|no secret context|nope/);

    // The first three (source add, admin-token create, agent-token create) were recorded too.
    t.same((await listAudit(db.pool, { action: 'source.add' })).map((e) => e.target), [`source:${sourceId}`]);
    t.same((await listAudit(db.pool, { action: 'admin_token.create' })).map((e) => e.target), [`admin-token:${adminToken.id}`]);
    t.same((await listAudit(db.pool, { action: 'agent_token.create' })).map((e) => e.target), [`agent-token:${agentToken.id}`]);

    const reads = await count();
    for (const argv of [['source', 'list'], ['context', 'list'], ['secret', 'list', 'deploy'], ['config', 'history'], ['admin-token', 'list'], ['audit', 'list']]) await admin(argv);
    t.equal(await count(), reads, 'reading commands record nothing');
  });

  await t.test('append-only in the database: UPDATE, DELETE and TRUNCATE refused', async (t) => {
    const id = await recordAudit(db.pool, { actor: { kind: 'system', id: '', name: 'svc' }, action: 'test.append', outcome: 'ok' });
    await t.rejects(db.pool.query(sql.unsafe`update audit_events set outcome = 'failed' where id = ${id}`), /append-only: UPDATE refused/);
    await t.rejects(db.pool.query(sql.unsafe`delete from audit_events where id = ${id}`), /append-only: DELETE refused/);
    await t.rejects(db.pool.query(sql.unsafe`truncate audit_events`), /append-only: TRUNCATE refused/);
    // A purge cut-off does not reach a row newer than it, even set by hand.
    await t.rejects(
      db.pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`select set_config('svc.audit_purge', (now() - interval '1 day')::text, true)`);
        await tx.query(sql.unsafe`delete from audit_events where id = ${id}`);
      }),
      /append-only: DELETE refused/,
    );
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`select count(*) from audit_events where id = ${id}`)), 1, 'still there');
    // A record sent twice (the relay after a lost answer) is stored once.
    const fixed = randomUUID();
    for (let i = 0; i < 2; i++) await recordAudit(db.pool, { id: fixed, actor: { kind: 'person', id: 'p1', name: 'ann' }, action: 'session.sign_in', outcome: 'ok', orgId: 'acme' });
    t.equal(Number(await db.pool.oneFirst(sql.unsafe`select count(*) from audit_events where id = ${fixed}`)), 1);
  });

  await t.test('retention: the pass deletes only records older than N days (timestamps moved)', async (t) => {
    const day = 86_400_000;
    const old = await recordAudit(db.pool, { at: new Date(Date.now() - 40 * day).toISOString(), actor: { kind: 'system', id: '', name: 'svc' }, action: 'test.old', outcome: 'ok' });
    const edge = await recordAudit(db.pool, { at: new Date(Date.now() - 29 * day).toISOString(), actor: { kind: 'system', id: '', name: 'svc' }, action: 'test.edge', outcome: 'ok' });
    const total = await count();
    t.equal(await purgeAudit(db.pool, 30), 1, 'one record past 30 days');
    t.equal(await count(), total - 1);
    const left = (await db.pool.anyFirst(sql.unsafe`select id::text from audit_events where id in (${old}, ${edge})`)) as string[];
    t.same(left, [edge]);
    t.equal(await purgeAudit(db.pool, 30), 0, 'a second pass finds nothing');
    await t.rejects(purgeAudit(db.pool, 0), /whole number of days, at least 1/);
  });

  await t.test('svc-admin audit list: filters and JSON lines', async (t) => {
    const base = Date.now() - 3600_000;
    await recordAudit(db.pool, { at: new Date(base).toISOString(), orgId: 'umbrella', actor: { kind: 'person', id: 'p-zed', name: 'zed' }, action: 'run.reject', target: 'run:r1', outcome: 'refused', detail: 'zed may not decide' });
    await recordAudit(db.pool, { at: new Date(base + 1000).toISOString(), orgId: 'umbrella', actor: { kind: 'token', id: 't-1', name: 'ci-bot' }, action: 'run.rerun', target: 'run:r1', outcome: 'ok' });
    const json = await admin(['audit', 'list', '--org', 'umbrella', '--json']);
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { action: string; actor: { name: string } });
    t.same(lines.map((l) => l.action), ['run.rerun', 'run.reject'], 'newest first, one JSON object per line');
    t.match((await admin(['audit', 'list', '--actor', 'ZED', '--json'])).stdout.trim().split('\n'), [/"action":"run.reject"/]);
    t.match((await admin(['audit', 'list', '--actor', 'p-zed'])).stdout, /\[umbrella\] person zed run\.reject run:r1 refused — zed may not decide/);
    t.equal((await admin(['audit', 'list', '--action', 'run.', '--org', 'umbrella', '--json'])).stdout.trim().split('\n').length, 2, 'an area prefix');
    t.equal((await admin(['audit', 'list', '--outcome', 'refused', '--org', 'umbrella', '--json'])).stdout.trim().split('\n').length, 1);
    const since = new Date(base + 500).toISOString();
    t.match((await admin(['audit', 'list', '--org', 'umbrella', '--since', since, '--json'])).stdout, /run\.rerun/);
    t.notMatch((await admin(['audit', 'list', '--org', 'umbrella', '--until', since, '--json'])).stdout, /run\.rerun/);
    t.equal((await admin(['audit', 'list', '--org', 'nobody'])).stdout.trim(), 'no audit records match');
    const bad = await admin(['audit', 'list', '--since', 'yesterday'], 1);
    t.match(bad.stderr, /SVC_ERR_AUDIT_QUERY_INVALID: --since "yesterday" is not a time/);
    const badOutcome = await admin(['audit', 'list', '--outcome', 'maybe'], 2);
    t.match(badOutcome.stderr, /Expected --outcome=maybe to be one of: ok, refused, failed/);
  });
});
