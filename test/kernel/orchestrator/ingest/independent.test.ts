// Independent mode end to end in one orchestrator: the real startOrchestrator on a real
// database, sources added with the real `svc-admin source add` process, webhooks over real HTTP
// with the relay's status codes, runs read back through the admin route and `svc-admin runs`.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { sourcePointerKey } from '../../../../kernel/orchestrator/ingest/steps/caches.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../../../kernel/orchestrator/subsystems.ts';
import { hmacSha256Hex } from '../../../../kernel/services/crypto/hmac.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { pushPayload, SHA_A } from '../../../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../../../fixtures/locks.ts';
import { runCli } from '../../../fixtures/cli.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';
import { Forge } from './harness.ts';

const ADMIN_TOKEN = 'admin-token-0123456789';
// Each svc-admin call is a fresh Node process.

await eachDatabase(t, async (t, db) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-indep-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SVC_DATABASE_URL: db.url,
    SVC_DATA_DIR: dataDir,
    SVC_SECRET_KEY: randomBytes(32).toString('base64'),
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    SVC_INSTANCE_ID: `indep-${randomUUID().slice(0, 8)}`,
  };
  delete env['SVC_PLATFORM_URL'];
  const forge = new Forge();
  const orchestrator = await startOrchestrator({
    env,
    cwd: dataDir,
    logger: testLogger,
    subsystems: ORCHESTRATOR_SUBSYSTEMS,
    plugins: (pluginEnv) => {
      const chosen = orchestratorPlugins(pluginEnv);
      return { ...chosen, builtIns: [...chosen.builtIns, forge.plugin()] };
    },
  });
  t.teardown(async () => {
    await orchestrator.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const base = orchestrator.url;
  const admin = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: { ...env, SVC_SERVER_PUBLIC_URL: base } });

  const added = await admin(['source', 'add', 'forge', '--org', 'acme', '--target-id', '7', '--json']);
  t.equal(added.code, 0, added.stderr);
  const { source, secret, webhookUrl } = JSON.parse(added.stdout) as { source: { id: string; routingKey: string }; secret: string; webhookUrl: string };
  t.equal(webhookUrl, `${base}/webhook/acme/forge`, 'independent mode: the orchestrator is the ingest point');
  t.equal(source.routingKey, 'forge:7');

  // A lock whose workflow also registers a webhook trigger, and a warm source cache.
  forge.putLock(SHA_A, [workflow('ci', [trig.push({ branches: ['main'] }), trig.webhook({ events: ['deploy'] })], [job('build'), job('test')])]);
  const storage = orchestrator.ctx.host.select('storage');
  await storage.put(sourcePointerKey('acme', workflow('ci', [trig.push()]).contentHash), Buffer.from('x'));

  const post = (path: string, body: Buffer, headers: Record<string, string>) =>
    fetch(`${base}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const signedPush = (deliveryId: string, key = secret) => {
    const body = Buffer.from(JSON.stringify(pushPayload()));
    return post('/webhook/acme/forge', body, {
      'x-provider-event': 'push',
      'x-provider-delivery': deliveryId,
      'x-provider-hook-installation-target-id': '7',
      'x-hub-signature-256': `sha256=${hmacSha256Hex(key, body)}`,
    });
  };

  await t.test('push: 200 matched, a run with queued jobs; replay is a duplicate', async (t) => {
    const res = await signedPush('d-1');
    t.equal(res.status, 200);
    const body = (await res.json()) as { status: string; runIds: string[] };
    t.equal(body.status, 'matched');
    t.equal(body.runIds.length, 1);
    const again = await signedPush('d-1');
    t.equal(again.status, 200);
    t.equal(((await again.json()) as { status: string }).status, 'duplicate');

    const detail = await fetch(`${base}/api/v1/admin/runs/${body.runIds[0]}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    t.equal(detail.status, 200);
    const run = (await detail.json()) as { workflow: string; workflowRepoIdentifier: string; jobs: Array<{ displayName: string; status: string }> };
    t.equal(run.workflow, 'ci');
    t.equal(run.workflowRepoIdentifier, 'acme/app');
    t.same(run.jobs.map((j) => [j.displayName, j.status]), [['build', 'queued'], ['test', 'queued']]);
    t.equal((await fetch(`${base}/api/v1/admin/runs?limit=5`, { headers: { authorization: 'Bearer wrong-token-xxxxxxxx' } })).status, 401);
    const list = (await (await fetch(`${base}/api/v1/admin/runs?limit=5`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { runs: unknown[] };
    t.equal(list.runs.length, 1);

    const cli = await admin(['runs', 'list', '--json']);
    t.equal(cli.code, 0, cli.stderr);
    const runs = (JSON.parse(cli.stdout) as { runs: Array<{ runId: string; jobs: Array<{ status: string }> }> }).runs;
    t.equal(runs[0]?.runId, body.runIds[0]);
    t.ok(runs[0]?.jobs.every((j) => j.status === 'queued'));
    const show = await admin(['runs', 'show', body.runIds[0]!, '--json']);
    t.equal(show.code, 0, show.stderr);
    t.equal((JSON.parse(show.stdout) as { runId: string }).runId, body.runIds[0]);
    const missing = await admin(['runs', 'show', randomUUID()]);
    t.equal(missing.code, 1);
    t.match(missing.stderr, /SVC_ERR_RUN_NOT_FOUND/);
  });

  await t.test('status codes: bad signature 401, unknown source 404, bad paths 404', async (t) => {
    t.equal((await signedPush('d-2', 'x'.repeat(32))).status, 401);
    const body = Buffer.from('{}');
    const unknown = await post('/webhook/acme/forge', body, { 'x-provider-event': 'push', 'x-provider-delivery': 'd-3', 'x-provider-hook-installation-target-id': '999', 'x-hub-signature-256': `sha256=${hmacSha256Hex(secret, body)}` });
    t.equal(unknown.status, 404);
    t.equal((await post('/webhook/bad%20org/forge', body, {})).status, 404);
  });

  await t.test('generic source: bearer, fan-out to the webhook registration, dedup key per target, limits', async (t) => {
    const g = await admin(['source', 'add', 'generic', '--org', 'acme', '--source-id', 'alerts', '--signature-mode', 'bearer', '--event-type', 'payload:event.type', '--delivery-id', 'header:x-request-id', '--max-payload-bytes', '200', '--json']);
    t.equal(g.code, 0, g.stderr);
    const generic = JSON.parse(g.stdout) as { secret: string; webhookUrl: string };
    t.equal(generic.webhookUrl, `${base}/webhook/acme/generic/alerts`);
    const send = (event: string, requestId: string, token = generic.secret, extra = '') =>
      post('/webhook/acme/generic/alerts', Buffer.from(JSON.stringify({ event: { type: event }, extra })), { authorization: `Bearer ${token}`, 'x-request-id': requestId });
    const res = await send('deploy', 'req-1');
    t.equal(res.status, 200);
    const body = (await res.json()) as { status: string; runIds: string[]; deliveryId: string };
    t.same([body.status, body.deliveryId, body.runIds.length], ['matched', 'req-1', 1]);
    const run = (await (await fetch(`${base}/api/v1/admin/runs/${body.runIds[0]}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as { deliveryId: string; provider: string; repository: string; sourceId: string };
    t.match(run.deliveryId, /^req-1:[0-9a-f-]{36}$/, 'dedup key <delivery_id>:<registration_id>');
    t.same([run.provider, run.repository, run.sourceId], ['forge', 'acme/app', source.id], "the registration's provider and source");
    t.equal(((await (await send('deploy', 'req-1')).json()) as { status: string }).status, 'duplicate');
    t.equal(((await (await send('other', 'req-2')).json()) as { status: string }).status, 'no_match');
    t.equal((await send('deploy', 'req-3', 'wrong-token-xxxxxxxxxxxx')).status, 401);
    t.equal((await send('deploy', 'req-4', generic.secret, 'y'.repeat(300))).status, 413);
    t.equal((await post('/webhook/acme/generic/nope', Buffer.from('{}'), {})).status, 404);
  });

  await t.test('svc-admin source: list, rotate (both secrets verify), remove; bad input changes nothing', async (t) => {
    const list = await admin(['source', 'list', '--json']);
    t.equal(list.code, 0, list.stderr);
    t.notMatch(list.stdout, secret, 'never a secret');
    t.equal((JSON.parse(list.stdout) as { sources: unknown[] }).sources.length, 2);
    const rotated = await admin(['source', 'rotate-secret', source.id, '--json']);
    t.equal(rotated.code, 0, rotated.stderr);
    const next = (JSON.parse(rotated.stdout) as { secret: string }).secret;
    orchestrator.ctx.logger.flush?.();
    t.equal((await signedPush('d-rot-old')).status, 200, 'old secret still verifies');
    t.equal((await signedPush('d-rot-new', next)).status, 200, 'new secret verifies');
    const bad = await admin(['source', 'add', 'generic', '--org', 'acme', '--signature-mode', 'sometimes']);
    t.equal(bad.code, 2, 'usage error');
    const dup = await admin(['source', 'add', 'forge', '--org', 'acme', '--target-id', '7']);
    t.equal(dup.code, 1);
    t.match(dup.stderr, /SVC_ERR_SOURCE_EXISTS/);
    const noDb = await runCli(join(REPO_ROOT, 'bin/svc-admin.ts'), ['source', 'list'], { env: { ...process.env, SVC_DATABASE_URL: '' } });
    t.equal(noDb.code, 2);
    t.equal((JSON.parse((await admin(['source', 'list', '--json'])).stdout) as { sources: unknown[] }).sources.length, 2, 'nothing changed');
    const removed = await admin(['source', 'remove', source.id]);
    t.equal(removed.code, 0, removed.stderr);
    orchestrator.ctx.logger.flush?.();
  });
});
