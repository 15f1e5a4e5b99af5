// Run-status webhooks of a git source, end to end: a real orchestrator (dispatch and forge-status
// subsystems) and a real HTTP listener on 127.0.0.1. Each run status change reaches the listener
// as JSON matching schemas/run-status-webhook.ts, signed with HMAC-SHA256 over the exact body
// bytes (verified here as a receiver would); the first answer is a 500, so the first
// notification is retried with the same delivery id; attempts are visible through the admin
// route and `svc-admin forge-status list|show`. With the listener gone, deliveries end `failed`
// after the bounded attempts and the run keeps its status.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { removeStatusWebhook, setStatusWebhook } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { RunStatusWebhookPayload } from '../../../../schemas/run-status-webhook.ts';
import { compileSchema, formatIssues } from '../../../../schemas/validate.ts';
import type { ForgeStatusDelivery, ForgeStatusDeliveryDetail } from '../../../../schemas/http/forge-status.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { runCli } from '../../../fixtures/cli.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';
import { insertRun, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { admin, deliveryDetail, gitSource, MASTER_KEY, MASTER_KEY_HEX, settled, startNode } from './harness.ts';


const SECRET = 'status-hook-secret-0123456789';
const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const checkPayload = compileSchema(RunStatusWebhookPayload);

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
  answered: number;
}

/**
 * A receiver: records every request with its raw body; answers from `script` (then 200), the
 * first answer only once `holdFirst` resolves (when given).
 */
async function listener(script: number[] = [], holdFirst?: Promise<void>): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answered = script.shift() ?? 200;
      const first = received.length === 0;
      received.push({ headers: req.headers, body: Buffer.concat(chunks), answered });
      void (first && holdFirst ? holdFirst : Promise.resolve()).then(() => {
        res.writeHead(answered, { 'content-type': 'text/plain' });
        res.end(answered === 200 ? 'ok' : 'receiver broke');
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let closed = false;
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/ci?team=core`,
    received,
    async close() {
      if (closed) return;
      closed = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** What a receiver does: HMAC-SHA256 of the raw body under the secret, compared in constant time. */
function signatureValid(r: Received, secret: string): boolean {
  const header = String(r.headers['x-svc-signature-256'] ?? '');
  const match = /^sha256=([0-9a-f]{64})$/.exec(header);
  if (!match) return false;
  const expected = createHmac('sha256', secret).update(r.body).digest();
  return timingSafeEqual(expected, Buffer.from(match[1]!, 'hex'));
}

await eachDatabase(t, async (t, db) => {
  const orch = await startNode(t, db.url);
  const agent = await TestAgent.online({ url: orch.url, agentId: 'hook-agent', labels: ['linux'] });
  t.teardown(() => agent.close());

  await t.test('signed notifications for every change; a 500 is retried with the same delivery id', async (t) => {
    const receiver = await listener([500]);
    t.teardown(() => receiver.close());
    const sourceId = await gitSource(db.pool);
    await setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url: receiver.url, secret: SECRET });

    const { runId, jobs } = await insertRun(db.pool, { sourceId, provider: 'git', sha: 'd'.repeat(40), jobs: [{ name: 'build', runsOn: ['linux'] }] });
    const build = jobs['build']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === build);
    agent.jobStatus(build, 'running');
    agent.jobStatus(build, 'failed', { reason: 'exit 2' });
    await until('run failed', async () => ((await runRow(db.pool, runId)).status === 'failed' ? true : undefined), 30_000);
    const deliveries = await settled(orch, runId, 3);
    t.same(deliveries.map((d) => [d.runStatus, d.target, d.providerKind, d.status]), [
      ['queued', 'webhook', 'git', 'delivered'],
      ['running', 'webhook', 'git', 'delivered'],
      ['failed', 'webhook', 'git', 'delivered'],
    ], 'every change delivered, in order (a git source has no forge status API: webhook only)');

    t.equal(receiver.received.length, 4, 'three notifications, the first sent twice');
    t.same(receiver.received.map((r) => r.answered), [500, 200, 200, 200]);
    for (const r of receiver.received) {
      t.ok(signatureValid(r, SECRET), 'the signature verifies over the raw body bytes');
      t.notOk(signatureValid(r, 'another-secret-0123456789'), 'and only with the secret');
      t.equal(r.headers['content-type'], 'application/json');
      t.equal(r.headers['x-svc-event'], 'run.status');
      t.match(r.headers['x-svc-timestamp'], /^\d{10}$/);
    }
    const payloads = receiver.received.map((r) => JSON.parse(r.body.toString('utf8')) as RunStatusWebhookPayload);
    for (const p of payloads) {
      const checked = checkPayload.validate(p);
      t.ok(checked.ok, checked.ok ? 'the body matches schemas/run-status-webhook.ts' : formatIssues(checked.issues));
    }
    const [first, retry, running, failed] = payloads as [RunStatusWebhookPayload, RunStatusWebhookPayload, RunStatusWebhookPayload, RunStatusWebhookPayload];
    t.equal(retry.deliveryId, first.deliveryId, 'a retry repeats the delivery id');
    t.equal(receiver.received[1]!.headers['x-svc-delivery'], first.deliveryId, 'in the header too');
    t.same([first.attempt, retry.attempt, running.attempt, failed.attempt], [1, 2, 1, 1]);
    t.same(payloads.map((p) => p.run.status), ['queued', 'queued', 'running', 'failed']);
    t.equal(new Set(payloads.map((p) => p.deliveryId)).size, 3, 'one delivery id per notification');
    t.match(failed, {
      type: 'run.status',
      run: {
        id: runId,
        orgId: 'org-1',
        repository: 'acme/widgets',
        workflow: 'ci',
        status: 'failed',
        state: 'completed',
        conclusion: 'failure',
        reason: 'job failed: build',
        sha: 'd'.repeat(40),
        ref: 'refs/heads/main',
        event: 'push',
        url: `https://ci.example.test/orgs/org-1/runs/${runId}`,
      },
      source: { id: sourceId, providerKind: 'git' },
    });
    t.ok(failed.run.finishedAt, 'finishedAt set');
    t.equal(String(Math.floor(Date.parse(failed.sentAt) / 1000)), receiver.received[3]!.headers['x-svc-timestamp'], 'the signed sentAt is the timestamp header');
    t.match(running, { run: { status: 'running', state: 'in_progress', conclusion: null } });

    // Visible to operators: the admin route …
    const queued = deliveries[0]!;
    t.match(queued, { attempts: 2, lastStatusCode: 200, lastError: null });
    const detail = await deliveryDetail(orch, queued.id);
    t.match(detail.history, [
      { attempt: 1, outcome: 'retry', statusCode: 500, error: /answered HTTP 500: receiver broke/ },
      { attempt: 2, outcome: 'delivered', statusCode: 200, error: null },
    ]);
    const denied = await fetch(`${orch.url}/api/v1/admin/forge-status?run=${runId}`);
    t.equal(denied.status, 401, 'the route needs the admin bearer');
    const bad = await admin<{ error: { code: string } }>(orch, '/api/v1/admin/forge-status?status=sent');
    t.equal(bad.status, 400);
    t.equal(bad.body.error.code, 'SVC_ERR_FORGE_STATUS_FILTER_INVALID');

    // … and svc-admin.
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: MASTER_KEY_HEX };
    const listed = await runCli(BIN, ['forge-status', 'list', '--run', runId], { env });
    t.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout.trim().split('\n');
    t.equal(lines.length, 3);
    t.match(lines[0], new RegExp(`  ${queued.id}  run ${runId}  webhook:git  queued → queued  delivered  attempts=2  http=200$`));
    t.match(lines[2], /  failed → completed\/failure  delivered  attempts=1  http=200$/);
    const json = await runCli(BIN, ['forge-status', 'list', '--run', runId, '--json'], { env });
    t.same((JSON.parse(json.stdout) as { deliveries: ForgeStatusDelivery[] }).deliveries, deliveries, 'the same records as the admin route');
    const shown = await runCli(BIN, ['forge-status', 'show', queued.id], { env });
    t.equal(shown.code, 0, shown.stderr);
    t.match(shown.stdout, /attempts:\n  #1  \S+  retry  http=500  node \S+  the run-status webhook http:\/\/127\.0\.0\.1:\d+\/hooks\/ci answered HTTP 500: receiver broke\n  #2  \S+  delivered  http=200/);
    t.notMatch(shown.stdout, /team=core/, 'the query of the URL is not shown');
    const showJson = await runCli(BIN, ['forge-status', 'show', queued.id, '--json'], { env });
    t.same(JSON.parse(showJson.stdout) as ForgeStatusDeliveryDetail, detail);
    const unknown = await runCli(BIN, ['forge-status', 'show', '00000000-0000-4000-8000-000000000000'], { env });
    t.equal(unknown.code, 1);
    t.match(unknown.stderr, /^SVC_ERR_FORGE_STATUS_NOT_FOUND: no forge status delivery/);
    const badFilter = await runCli(BIN, ['forge-status', 'list', '--run', 'nope'], { env: { PATH: process.env['PATH'], HOME: process.env['HOME'] } });
    t.equal(badFilter.code, 1);
    t.match(badFilter.stderr, /SVC_ERR_FORGE_STATUS_FILTER_INVALID: run "nope" is not valid: a run id is a UUID/, 'refused before a database is needed');
  });

  await t.test('listener down: deliveries fail after the bounded attempts, the run keeps its status', async (t) => {
    const receiver = await listener();
    const url = receiver.url;
    await receiver.close();
    const sourceId = await gitSource(db.pool, 'org-2');
    await setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url, secret: SECRET });
    const { runId, jobs } = await insertRun(db.pool, { orgId: 'org-2', sourceId, provider: 'git', jobs: [{ name: 'build', runsOn: ['linux'] }] });
    const build = jobs['build']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === build);
    agent.jobStatus(build, 'running');
    agent.jobStatus(build, 'completed');
    await until('run completed', async () => ((await runRow(db.pool, runId)).status === 'completed' ? true : undefined), 30_000);
    const deliveries = await settled(orch, runId, 3);
    t.same(deliveries.map((d) => [d.runStatus, d.status, d.attempts]), [
      ['queued', 'failed', 3],
      ['running', 'failed', 3],
      ['completed', 'failed', 3],
    ], 'each notification tried three times, in order, then failed');
    t.match(deliveries[2]!.lastError, /could not be reached: .*\(attempt 3 of 3; no more attempts\)/);
    t.equal(deliveries[2]!.lastStatusCode, null, 'no HTTP answer came');
    t.match(await runRow(db.pool, runId), { status: 'completed', reason: null }, 'the run is untouched');
  });

  await t.test('a removed webhook: a queued delivery is skipped, later changes enqueue nothing', async (t) => {
    let release = (): void => undefined;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const receiver = await listener([500], hold);
    t.teardown(() => receiver.close());
    t.teardown(release);
    const sourceId = await gitSource(db.pool, 'org-3');
    await setStatusWebhook(db.pool, MASTER_KEY, sourceId, { url: receiver.url, secret: SECRET });
    const { runId, jobs } = await insertRun(db.pool, { orgId: 'org-3', sourceId, provider: 'git', jobs: [{ name: 'x', runsOn: ['linux'] }] });
    await until('a first attempt', () => (receiver.received.length > 0 ? true : undefined), 30_000);
    await removeStatusWebhook(db.pool, sourceId);
    release();
    const x = jobs['x']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === x);
    agent.jobStatus(x, 'completed');
    await until('run completed', async () => ((await runRow(db.pool, runId)).status === 'completed' ? true : undefined), 30_000);
    const all = await settled(orch, runId, 1);
    t.match(all.find((d) => d.runStatus === 'queued'), { status: 'skipped', attempts: 2, lastError: /no run-status webhook any more/ });
    // The run's `running` (its job's dispatch) may come before the removal, and then before the
    // reporter's first pass: a change made while the webhook existed is enqueued, then skipped.
    for (const d of all.filter((d) => d.runStatus !== 'queued')) {
      t.match(d, { runStatus: 'running', status: 'skipped', lastError: /no run-status webhook any more/ }, 'a change from before the removal is skipped');
    }
    t.notOk(all.some((d) => d.runStatus === 'completed'), 'no delivery for the change after the removal');
    t.equal(receiver.received.length, 1, 'nothing more was sent');
  });
});
