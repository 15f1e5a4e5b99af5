// The /admin/config routes and reload of a real in-process orchestrator (real PostgreSQL, real
// listening socket, the real svc-admin process for `config reload`): strict bodies, local fields
// refused, versions written and reloaded by every node, redacted reads and export, rollback, one
// reload at a time, a bad config kept out, held fields warned about, SIGHUP bursts debounced,
// and the reload metric counted per source.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { adminAuthSubsystem } from '../../../../kernel/orchestrator/admin-auth/subsystem.ts';
import { startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import { configSubsystem } from '../../../../kernel/orchestrator/config/subsystem.ts';
import { createDatabase, sql } from '../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { REPO_ROOT, runProgram } from '../../../fixtures/programs.ts';


const ADMIN_TOKEN = 'config-admin-token-0123456789abcdef';
const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
const json = { ...auth, 'content-type': 'application/json' };
const SECRETS = {
  platform: { token: 'canary-platform-token-r0utes1' },
  secrets: { key: 'canary-secrets-key-r0utes22', bootstrapAdminToken: 'canary-bootstrap-token-r0utes3' },
  cluster: { joinToken: 'canary-join-token-r0utes444' },
};

const LOCAL_FILE = (extra = '') => `server:\n  port: 0\n  host: 127.0.0.1\ninstance:\n  id: node-a\n${extra}`;

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function metric(orch: Orchestrator, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${orch.url}/metrics`)).text();
  const line = text.split('\n').find((l) => (labels === '' ? l.startsWith(`${name} `) : l.startsWith(`${name}{`) && labels.split(',').every((label) => l.includes(label))));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}
const reloads = (orch: Orchestrator, result: string, source: string) => metric(orch, 'svc_orch_config_reload_total', `result="${result}",source="${source}"`);

async function call(orch: Orchestrator, method: string, path: string, body?: unknown, headers: Record<string, string> = body === undefined ? auth : json) {
  const response = await fetch(`${orch.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> & { error?: unknown } };
}

await eachDatabase(t, async (t, db) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-config-routes-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'svc.yaml');
  await writeFile(file, LOCAL_FILE());
  const env = { SVC_DATABASE_URL: db.url, SVC_CONFIG_FILE: file, SVC_DATA_DIR: dir, SVC_SECRET_KEY: 'd'.repeat(64), SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN };
  const orch = await startOrchestrator({ env, cwd: dir, logger: testLogger, plugins: orchestratorPlugins, subsystems: [adminAuthSubsystem, configSubsystem] });
  t.teardown(() => orch.stop());

  await t.test('reads need the admin bearer', async (t) => {
    t.equal((await call(orch, 'GET', '/admin/config', undefined, {})).status, 401);
    t.equal((await call(orch, 'POST', '/admin/config/reload', undefined, { authorization: 'Bearer wrong-token-0000000000' })).status, 401);
  });

  await t.test('before any version: the running shared config, redacted, version null', async (t) => {
    const { status, body } = await call(orch, 'GET', '/admin/config');
    t.equal(status, 200);
    t.equal(body['version'], null);
    const config = body['config'] as { queue: { maxDepth: number }; secrets: { bootstrapAdminToken: string }; server?: unknown };
    t.equal(config.queue.maxDepth, 10_000);
    t.equal(config.secrets.bootstrapAdminToken, '***REDACTED***');
    t.equal(config.server, undefined, 'local fields are not shown as shared');
    t.ok((body['localOverrides'] as string[]).includes('secrets.bootstrapAdminToken'), 'the env override of a shared field is named');
  });

  await t.test('PUT refuses unknown body fields, local fields and bad values, writing nothing', async (t) => {
    const unknown = await call(orch, 'PUT', '/admin/config', { config: {}, extra: 1 });
    t.equal(unknown.status, 400);
    const local = await call(orch, 'PUT', '/admin/config', { config: { database: { url: 'postgres://h/d' }, queue: { maxDepth: 5 } } });
    t.equal(local.status, 400);
    t.match(local.body.error, { code: 'SVC_ERR_CONFIG_LOCAL_FIELD', message: /database\.url is a local field/ });
    const bad = await call(orch, 'PUT', '/admin/config', { config: { queue: { maxDepth: 'lots' } } });
    t.equal(bad.status, 400);
    t.match(bad.body.error, { code: 'SVC_ERR_CONFIG_VERSION_INVALID', message: /queue\.maxDepth/ });
    // An s3 setting while storage stays on the filesystem: nothing would read it.
    const s3 = await call(orch, 'PUT', '/admin/config', { config: { storage: { bucket: 'ci-cache' } } });
    t.equal(s3.status, 400, 'a field this version does not honour');
    t.match(s3.body.error, { code: 'SVC_ERR_CONFIG_UNSUPPORTED', message: /config storage\.bucket: an s3 storage setting, and storage\.type is filesystem/ });
    const noBucket = await call(orch, 'PUT', '/admin/config', { config: { storage: { type: 's3' } } });
    t.equal(noBucket.status, 400, 's3 without a bucket');
    t.match(noBucket.body.error, { code: 'SVC_ERR_CONFIG_UNSUPPORTED', message: /config storage\.type: s3 storage needs a bucket/ });
    t.same((await call(orch, 'GET', '/admin/config/versions')).body, { versions: [] });
  });

  let v1 = 0;
  await t.test('PUT writes a version; the node reloads it through the cluster notification', async (t) => {
    const clusterBefore = await reloads(orch, 'success', 'cluster');
    const put = await call(orch, 'PUT', '/admin/config', { config: { queue: { maxDepth: 321 }, agentAuth: 'none', ...SECRETS }, description: 'smaller queue' });
    t.equal(put.status, 201);
    t.match(put.body, { createdBy: 'api:set', description: 'smaller queue' });
    v1 = put.body['version'] as number;
    await until('the reload of the new version', async () => ((await call(orch, 'GET', '/admin/config')).body['version'] === v1 ? true : undefined));
    t.equal(orch.ctx.config.queue.maxDepth, 321, 'a live field is in effect at once');
    t.equal(orch.ctx.config.agentAuth, 'none');
    t.equal(orch.ctx.config.platform.token, undefined, 'a field read at start keeps its running value');
    const shown = await call(orch, 'GET', '/admin/config');
    t.ok((shown.body['pending'] as string[]).some((w) => w.startsWith('platform.token changed but needs a restart')), 'and the change is reported as pending');
    t.equal(await reloads(orch, 'success', 'cluster'), clusterBefore + 1);
    t.equal(await metric(orch, 'svc_orch_config_version', ''), v1, 'version gauge');
  });

  await t.test('versions, one version and export are redacted at the four sensitive paths', async (t) => {
    const list = await call(orch, 'GET', '/admin/config/versions');
    t.same((list.body['versions'] as Array<{ version: number }>).map((v) => v.version), [v1]);
    const one = await call(orch, 'GET', `/admin/config/versions/${v1}`);
    const exported = await call(orch, 'GET', '/admin/config/export?redacted=true');
    for (const doc of [one.body['config'], exported.body['config']] as Array<typeof SECRETS>) {
      t.equal(doc.platform.token, '***REDACTED***');
      t.equal(doc.secrets.key, '***REDACTED***');
      t.equal(doc.secrets.bootstrapAdminToken, '***REDACTED***');
      t.equal(doc.cluster.joinToken, '***REDACTED***');
      t.notOk(JSON.stringify(doc).includes('canary-'));
    }
    const plain = await call(orch, 'GET', '/admin/config/export');
    t.match(plain.body['config'], SECRETS, 'the plain export (config.write) holds the values');
    t.equal((await call(orch, 'GET', '/admin/config/versions/999')).status, 404);
    t.equal((await call(orch, 'GET', '/admin/config/versions/abc')).status, 400);
  });

  await t.test('rollback writes a new version copying the target content', async (t) => {
    const put = await call(orch, 'PUT', '/admin/config', { config: { queue: { maxDepth: 77 } } });
    const v2 = put.body['version'] as number;
    const rolled = await call(orch, 'POST', '/admin/config/rollback', { version: v1 });
    t.equal(rolled.status, 201);
    t.match(rolled.body, { createdBy: 'api:rollback', version: v2 + 1 });
    const v3 = rolled.body['version'] as number;
    t.match((await call(orch, 'GET', '/admin/config/export')).body, { version: v3, config: { queue: { maxDepth: 321 }, ...SECRETS } });
    t.equal((await call(orch, 'POST', '/admin/config/rollback', { version: 999 })).status, 404);
    t.equal((await call(orch, 'POST', '/admin/config/rollback', { version: v1, extra: true })).status, 400);
    await until('the rollback is in effect', async () => ((await call(orch, 'GET', '/admin/config')).body['version'] === v3 ? true : undefined));
    t.equal(orch.ctx.config.queue.maxDepth, 321);
  });

  await t.test('two reloads at once: exactly one is told "Reload already in progress"', async (t) => {
    // Hold the reload inside its read of the newest version, so "at once" does not depend on speed.
    const blocker = await createDatabase({ url: db.url, logger: testLogger, maxPoolSize: 1 });
    t.teardown(() => blocker.end());
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const locked = new Promise<void>((ready) => {
      void blocker.transaction(async (tx) => {
        await tx.query(sql.unsafe`LOCK TABLE config_versions IN ACCESS EXCLUSIVE MODE`);
        ready();
        await released;
      });
    });
    await locked;
    const both = [call(orch, 'POST', '/admin/config/reload'), call(orch, 'POST', '/admin/config/reload')];
    const third = await call(orch, 'POST', '/admin/config/reload');
    release();
    const results = [...(await Promise.all(both)), third];
    const busy = results.filter((r) => r.status === 409);
    const done = results.filter((r) => r.status === 200);
    t.equal(done.length, 1, 'one reload ran');
    t.equal(busy.length, 2, 'every other request while it ran was refused');
    for (const r of busy) t.same(r.body, { success: false, error: 'Reload already in progress' });
    t.match(done[0]?.body, { success: true, result: 'success' });
  });

  await t.test('a bad local file is refused: the old config is kept, result failed', async (t) => {
    const failedBefore = await reloads(orch, 'failed', 'http');
    await writeFile(file, LOCAL_FILE('queue:\n  maxDepth: lots\n'));
    const { status, body } = await call(orch, 'POST', '/admin/config/reload');
    t.equal(status, 422);
    t.match(body, { success: false, result: 'failed', error: /queue\.maxDepth/ });
    t.equal(orch.ctx.config.queue.maxDepth, 321, 'old config kept');
    t.equal(await reloads(orch, 'failed', 'http'), failedBefore + 1);
  });

  await t.test('held fields keep their start values with a warning; a live local change applies', async (t) => {
    await writeFile(file, LOCAL_FILE('storage:\n  fsPath: /elsewhere\nqueue:\n  timeoutMs: 1234\n').replace('port: 0', 'port: 1').replace('id: node-a', 'id: node-z'));
    const { status, body } = await call(orch, 'POST', '/admin/config/reload');
    t.equal(status, 200);
    const warnings = body['warnings'] as string[];
    for (const path of ['server.port', 'instance.id', 'storage.fsPath']) t.ok(warnings.some((w) => w.startsWith(`${path} changed but is held at its startup value`)), `${path} warned`);
    t.same(body['changed'], ['queue.timeoutMs']);
    t.equal(orch.ctx.config.server.port, 0);
    t.equal(orch.ctx.config.instance.id, 'node-a');
    t.equal(orch.ctx.config.storage.fsPath, undefined);
    t.equal(orch.ctx.config.queue.timeoutMs, 1234);
    t.equal(orch.ctx.nodeId, 'node-a');
  });

  await t.test('a burst of SIGHUPs is one reload', async (t) => {
    const before = await reloads(orch, 'attempted', 'sighup');
    process.kill(process.pid, 'SIGHUP');
    process.kill(process.pid, 'SIGHUP');
    process.kill(process.pid, 'SIGHUP');
    await until('the SIGHUP reload', async () => ((await reloads(orch, 'success', 'sighup')) > 0 ? true : undefined));
    // Every SIGHUP was handled by now (the reload waited out its debounce). A second SIGHUP reload
    // would be pending or queued behind the first: an operator's reload would be told "Reload
    // already in progress". It runs instead, so none is left to come.
    const after = await call(orch, 'POST', '/admin/config/reload');
    t.equal(after.status, 200, 'the reloader was idle after the SIGHUP reload');
    t.equal(await reloads(orch, 'attempted', 'sighup'), before + 1);
  });

  await t.test('svc-admin config reload calls the route, counted with source cli', async (t) => {
    const before = await reloads(orch, 'success', 'cli');
    const run = await runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), ['config', 'reload', '--url', orch.url, '--json'], {
      env: { PATH: process.env['PATH'], HOME: dir, SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN },
      cwd: dir,
      timeoutMs: 120_000,
    });
    t.equal(run.code, 0, run.stderr);
    t.match(JSON.parse(run.stdout), { success: true, result: 'success' });
    t.equal(await reloads(orch, 'success', 'cli'), before + 1);
    t.ok((await reloads(orch, 'attempted', 'http')) >= 3, 'http reloads were counted under http');
  });
});
