// svc-admin debug-bundle and diagnose against a THREE-node cluster of real svc-orchestrator
// processes on one PostgreSQL, with canary secrets everywhere a secret can be: the bootstrap
// admin token, the master key, the platform token, the cluster join token, the database
// password (system PostgreSQL trusts, so any password works), a source's webhook secret and a
// secret-context value. The bundle is unpacked and every file is searched for every canary.
// - --fleet: every live node (each recorded its own address) gives versions, health, redacted
//   config and its recent log lines; a node row that is alive in the table but does not answer
//   is recorded as unreachable, not a crash; the cluster membership is included.
// - without --fleet: the one node at --url.
// - diagnose: one line per check; the cluster has no agent (a warning: exit 1).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import t from 'tap';
import * as tar from 'tar';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase, type Test } from '../fixtures/db.ts';
import { REPO_ROOT, runProgram, startProgram, type StartedProgram } from '../fixtures/programs.ts';

t.setTimeout(1_200_000);

const ORCH = join(REPO_ROOT, 'bin/svc-orchestrator.ts');
const ADMIN = join(REPO_ROOT, 'bin/svc-admin.ts');

const CANARY = {
  adminToken: `canary-admin-token-${randomBytes(8).toString('hex')}`,
  joinToken: `canary-join-token-${randomBytes(8).toString('hex')}`,
  platformToken: `canary-platform-token-${randomBytes(8).toString('hex')}`,
  webhookSecret: `canary-webhook-secret-${randomBytes(8).toString('hex')}`,
  contextValue: `canary-context-value-${randomBytes(8).toString('hex')}`,
  dbPassword: `canary-db-password-${randomBytes(8).toString('hex')}`,
  masterKey: randomBytes(32).toString('base64'),
};

async function tempDir(t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path)));
    else out.push(path);
  }
  return out;
}

/** Unpacks the bundle; returns its files by path inside the bundle root. */
async function unpack(t: Test, file: string): Promise<Map<string, string>> {
  const dir = await tempDir(t, 'svc-bundle-x-');
  await tar.x({ file, cwd: dir });
  const [root] = await readdir(dir);
  const files = new Map<string, string>();
  for (const path of await filesUnder(join(dir, root!))) files.set(relative(join(dir, root!), path), await readFile(path, 'utf8'));
  return files;
}

function noCanaries(t: Test, files: Map<string, string>, bundle: string): void {
  let hits = 0;
  for (const [path, text] of files) {
    for (const [name, value] of Object.entries(CANARY)) {
      if (text.includes(value)) {
        hits++;
        t.fail(`${bundle}: ${path} contains the ${name} canary`);
      }
    }
  }
  t.equal(hits, 0, `${bundle}: no canary in any of ${files.size} files`);
}

await eachDatabase(t, async (t, db) => {
  // Trust auth (system PostgreSQL) ignores the password: it is only there to be leaked or not.
  const url = new URL(db.url);
  const withPassword = url.password === '';
  if (withPassword) url.password = CANARY.dbPassword;
  const databaseUrl = url.toString();
  const storage = await tempDir(t, 'svc-bundle-storage-');
  const common = {
    PATH: process.env['PATH'],
    HOME: process.env['HOME'],
    SVC_DATABASE_URL: databaseUrl,
    SVC_SECRET_KEY: CANARY.masterKey,
    SVC_BOOTSTRAP_ADMIN_TOKEN: CANARY.adminToken,
    SVC_CLUSTER_JOIN_TOKEN: CANARY.joinToken,
    SVC_PLATFORM_TOKEN: CANARY.platformToken,
    SVC_STORAGE_TYPE: 'filesystem',
    SVC_STORAGE_FS_PATH: storage,
  };
  const admin = (args: string[], extra: Record<string, string> = {}, cwd?: string) =>
    runProgram(ADMIN, args, { env: { ...common, ...extra }, timeoutMs: 90_000, ...(cwd !== undefined ? { cwd } : {}) });

  // Secrets in the database before the nodes start: a generic source's webhook secret, a context value.
  const added = await admin(['source', 'add', 'generic', '--org', 'acme', '--source-id', 'hooks', '--secret', CANARY.webhookSecret, '--json']);
  t.equal(added.code, 0, added.stderr);
  t.equal((await admin(['context', 'create', 'deploy', '--repositories', 'acme/*'])).code, 0);
  const set = await admin(['secret', 'set', 'deploy', 'TOKEN', '--value', CANARY.contextValue]);
  t.equal(set.code, 0, set.stderr);

  const nodes: StartedProgram[] = [];
  const byId = new Map<string, StartedProgram>();
  t.teardown(async () => {
    for (const n of nodes) await n.stop();
  });
  const start = async (id: string) => {
    const node = await startProgram(ORCH, 'svc-orchestrator', {
      env: { ...common, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_SERVER_LOG_LEVEL: 'debug', SVC_INSTANCE_ID: id, SVC_DATA_DIR: await tempDir(t, `svc-${id}-`), SVC_CLUSTER_HEARTBEAT_MS: '1000' },
      readyTimeoutMs: 120_000,
    });
    nodes.push(node);
    byId.set(id, node);
    return node;
  };
  const a = await start('node-a');
  await Promise.all([start('node-b'), start('node-c')]);

  // Some traffic worth logging: a signed-wrongly webhook, a refused admin call, a good one.
  await fetch(`${a.url}/webhook/acme/generic/hooks`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': 'sha256=00' }, body: '{"hello":1}' });
  t.equal((await fetch(`${a.url}/api/v1/admin/debug`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401);
  const direct = await fetch(`${a.url}/api/v1/admin/debug`, { headers: { authorization: `Bearer ${CANARY.adminToken}` } });
  t.equal(direct.status, 200);
  t.match(await direct.json(), { nodeId: 'node-a', nodeUrl: a.url, versions: { package: /^\d+\.\d+\.\d+/ }, health: { database: { status: 'pass' } } });

  // A node the table believes alive (it beat just now) that nobody answers for.
  await db.pool.query(sql.unsafe`
    INSERT INTO cluster_nodes (node_id, address, node_url, incarnation, pid, version, leader, started_at, last_seen_at)
    VALUES ('node-gone', 'http://127.0.0.1:9', 'http://127.0.0.1:9', gen_random_uuid(), 1, '0.9.0', false, now(), now())`);
  // The CLI's alive window: three beats of 10 minutes, so the row stays alive for the whole test.
  const slowBeats = { SVC_CLUSTER_HEARTBEAT_MS: '600000' };

  await t.test('--fleet: three nodes collected, the silent one unreachable, no canary anywhere', async (t) => {
    const work = await tempDir(t, 'svc-bundle-');
    const out = join(work, 'fleet.tar.gz');
    const made = await admin(['debug-bundle', '--fleet', '--out', out, '--json'], slowBeats);
    t.equal(made.code, 0, made.stderr);
    const result = JSON.parse(made.stdout) as { file: string; fleet: boolean; nodes: Array<{ nodeId: string; status: string; reason?: string; dir: string }> };
    t.equal(result.file, out);
    t.same(result.nodes.map((n) => [n.nodeId, n.status]), [['node-a', 'ok'], ['node-b', 'ok'], ['node-c', 'ok'], ['node-gone', 'unreachable']]);
    t.match(result.nodes[3]!.reason, /^unreachable: /);
    t.ok((await stat(out)).size > 0);

    const files = await unpack(t, out);
    for (const id of ['node-a', 'node-b', 'node-c']) {
      for (const f of ['node.json', 'versions.json', 'health.json', 'config.json', 'logs.ndjson']) t.ok(files.has(`nodes/${id}/${f}`), `nodes/${id}/${f}`);
      const versions = JSON.parse(files.get(`nodes/${id}/versions.json`)!) as Record<string, unknown>;
      t.match(versions, { package: /^\d+\.\d+\.\d+/, node: process.version, migration: /^\d{4}_[a-z0-9_]+\.sql$/, lockSchema: Number, wireProtocol: Number });
      t.equal(versions['migrationsApplied'], versions['migrationsKnown'], `${id}: every migration applied`);
      t.match(JSON.parse(files.get(`nodes/${id}/health.json`)!), { status: 'pass', database: { status: 'pass' }, relayLink: { configured: false, connected: false } });
      const config = JSON.parse(files.get(`nodes/${id}/config.json`)!) as { secrets: Record<string, unknown>; platform: Record<string, unknown>; cluster: Record<string, unknown>; database: { url: string } };
      t.equal(config.secrets['bootstrapAdminToken'], '***REDACTED***');
      t.equal(config.secrets['key'], '***REDACTED***');
      t.equal(config.platform['token'], '***REDACTED***');
      t.equal(config.cluster['joinToken'], '***REDACTED***');
      if (withPassword) t.match(config.database.url, /:\*\*\*REDACTED\*\*\*@/);
      const logs = files.get(`nodes/${id}/logs.ndjson`)!.trim().split('\n');
      t.ok(logs.length > 0, `${id} sent log lines`);
      t.ok(logs.every((l) => (JSON.parse(l) as { name: string }).name === 'svc-orchestrator'), 'pino lines of the orchestrator');
      t.ok(logs.some((l) => l.includes('"orchestrator listening"')), `${id}: the start line is in its ring`);
    }
    t.match(files.get('nodes/node-a/logs.ndjson'), /webhook|signature/i, "node-a's ring has the webhook it refused");
    t.match(JSON.parse(files.get('nodes/node-gone/unreachable.json')!), { nodeId: 'node-gone', url: 'http://127.0.0.1:9', reason: /^unreachable: / });
    const manifest = JSON.parse(files.get('manifest.json')!) as { fleet: boolean; nodes: Array<{ status: string }> };
    t.equal(manifest.fleet, true);
    t.same(manifest.nodes.map((n) => n.status), ['ok', 'ok', 'ok', 'unreachable']);
    const membership = JSON.parse(files.get('cluster/nodes.json')!) as { nodes: Array<{ nodeId: string; alive: boolean }> };
    t.same(membership.nodes.map((n) => n.nodeId).sort(), ['node-a', 'node-b', 'node-c', 'node-gone']);
    t.match(JSON.parse(files.get('cli/config.json')!), { secrets: { bootstrapAdminToken: '***REDACTED***', key: '***REDACTED***' } });
    noCanaries(t, files, 'fleet bundle');
  });

  await t.test('one node (--url), default file name in the working directory; refusals', async (t) => {
    const work = await tempDir(t, 'svc-bundle-one-');
    const made = await admin(['debug-bundle', '--url', byId.get('node-b')!.url], {}, work);
    t.equal(made.code, 0, made.stderr);
    t.match(made.stdout, /^node-b {2}collected$/m);
    const [name] = await readdir(work);
    t.match(name, /^svc-debug-.*\.tar\.gz$/);
    const files = await unpack(t, join(work, name!));
    t.same([...files.keys()].filter((k) => k.startsWith('nodes/')).map((k) => k.split('/')[1]).filter((v, i, all) => all.indexOf(v) === i), ['node-b']);
    noCanaries(t, files, 'one-node bundle');

    const noToken = await runProgram(ADMIN, ['debug-bundle', '--url', byId.get('node-b')!.url], { env: { PATH: process.env['PATH'], HOME: process.env['HOME'] }, timeoutMs: 60_000 });
    t.equal(noToken.code, 2);
    t.match(noToken.stderr, /SVC_ERR_CLI_USAGE: .*--token or set SVC_BOOTSTRAP_ADMIN_TOKEN/);
    const badOut = await admin(['debug-bundle', '--url', byId.get('node-b')!.url, '--out', join(work, 'missing-dir', 'x.tar.gz')]);
    t.equal(badOut.code, 1);
    t.match(badOut.stderr, /SVC_ERR_CLI_BUNDLE_WRITE: could not write/);
    const wrongToken = await admin(['debug-bundle', '--url', byId.get('node-b')!.url, '--token', 'not-the-admin-token-123', '--out', join(work, 'refused.tar.gz'), '--json']);
    t.equal(wrongToken.code, 0, 'a refusing node is recorded, not a crash');
    t.match(JSON.parse(wrongToken.stdout), { nodes: [{ status: 'unreachable', reason: /refused the admin token \(HTTP 401\)/ }] });
  });

  await t.test('diagnose on the cluster: no agent is a warning (exit 1), the rest passes', async (t) => {
    await db.pool.query(sql.unsafe`DELETE FROM cluster_nodes WHERE node_id = 'node-gone'`);
    const json = await admin(['diagnose', '--json']);
    t.equal(json.code, 1, json.stderr);
    const report = JSON.parse(json.stdout) as { status: string; checks: Array<{ name: string; status: string; message: string }> };
    t.equal(report.status, 'warn');
    t.same(report.checks.map((c) => [c.name, c.status]), [['database', 'pass'], ['migrations', 'pass'], ['storage', 'pass'], ['relay-link', 'pass'], ['signing', 'skip'], ['agents', 'warn']]);
    t.match(report.checks[3]!.message, /independent mode/);
    const text = await admin(['diagnose']);
    t.equal(text.code, 1);
    t.match(text.stdout, /^pass {2}database {4}connected to /m);
    t.match(text.stdout, /^warn {2}agents {6}no agent online/m);
    t.match(text.stdout, /some checks warn\n$/);
    for (const value of Object.values(CANARY)) t.notOk(text.stdout.includes(value) || text.stderr.includes(value), 'no canary in diagnose output');
  });
});
