// GitHub ingest end to end with real processes: svc-relay and svc-orchestrator on real
// PostgreSQL, the fake GitHub API over real HTTP (App JWT → installation token → contents API),
// an org from `svc-admin relay org create` and a github source from `svc-admin source add github`.
// A signed GitHub-shaped push with GitHub's own header names, posted to the relay, becomes a run
// with queued jobs (the lock served by the fake at that sha); a pull request from a fork is
// trusted `unknown` and uses the base commit's lock. With GitHub unreachable for a minute, pushes
// are answered 200, kept and retried by the orchestrator until each becomes its run (the minute
// passes in the database: the kept deliveries' clocks are moved, not waited out).
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildLock, serializeLock } from '../../workflow/lock/lock-file.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { generateAppKeyPair, startFakeGithub } from '../fixtures/fake-github.ts';
import { pullRequestPayload, pushPayload, SHA_A, SHA_B } from '../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../fixtures/locks.ts';
import { REPO_ROOT, runProgram, startProgram, type StartedProgram } from '../fixtures/programs.ts';

t.setTimeout(1_200_000);

const APP_ID = '4242';
const INSTALLATION = '99';
const keys = generateAppKeyPair();
const baseLock = serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('ci', [trig.push(), trig.pr()], [job('build'), job('test')])] }));
// The fork's head changes the workflows: the run must still come from the base lock.
const headLock = serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('ci', [trig.push(), trig.pr()], [job('build'), job('test'), job('exfiltrate')])] }));

interface RunsList {
  runs: Array<{ runId: string; deliveryId: string; sha: string; workflow: string; workflowSha: string; trustTier: string; isFork: string; workflowModified: boolean; jobs: Array<{ name: string; kind: string; status: string }> }>;
}

await eachDatabase(t, async (t, db) => {
  const root = await mkdtemp(join(tmpdir(), 'svc-e2e-github-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation(INSTALLATION, ['acme/app']);
  fake.addCommit('acme/app', SHA_B, { files: { '.svc/svc.lock.json': baseLock, 'README.md': 'base' } });
  fake.addCommit('acme/app', SHA_A, { parent: SHA_B, files: { '.svc/svc.lock.json': headLock, 'README.md': 'head' } });

  const relayDb = await db.extraDatabase();
  const started: StartedProgram[] = [];
  t.teardown(async () => {
    for (const p of started.reverse()) await p.stop().catch(() => undefined);
  });
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, SVC_SERVER_LOG_LEVEL: 'warn' };
  delete baseEnv['SVC_PLATFORM_URL'];
  delete baseEnv['SVC_PLATFORM_TOKEN'];

  const relayEnv = { ...baseEnv, SVC_RELAY_DATABASE_URL: relayDb, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: join(root, 'relay') };
  const relay = await startProgram(join(REPO_ROOT, 'bin/svc-relay.ts'), 'svc-relay', { env: relayEnv, readyTimeoutMs: 60_000 });
  started.push(relay);
  const relayUrl = relay.url;

  const org = await runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), ['relay', 'org', 'create', 'acme', '--json'], { env: relayEnv, timeoutMs: 60_000 });
  t.equal(org.code, 0, org.stderr);
  const platformToken = (JSON.parse(org.stdout) as { token: string }).token;

  const orchEnv = {
    ...baseEnv,
    SVC_DATABASE_URL: db.url,
    SVC_DATA_DIR: join(root, 'orch'),
    SVC_SECRET_KEY: randomBytes(32).toString('base64'),
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_PLATFORM_URL: relayUrl,
    SVC_PLATFORM_TOKEN: platformToken,
    SVC_INSTANCE_ID: 'e2e-orch-github',
    // Kept deliveries retried every 1 s doubling to 4 s: minutes of back-off would outlast the test.
    SVC_INGEST_RETRY_BASE_MS: '1000',
    SVC_INGEST_RETRY_MAX_MS: '4000',
  };
  const admin = (args: string[]) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: orchEnv, timeoutMs: 60_000 });

  const keyFile = join(root, 'app.pem');
  await writeFile(keyFile, keys.privateKeyPem, { mode: 0o600 });
  const added = await admin(['source', 'add', 'github', '--org', 'acme', '--app-id', APP_ID, '--private-key-file', keyFile, '--setting', `apiBaseUrl=${fake.url}`, '--json']);
  t.equal(added.code, 0, added.stderr);
  const source = JSON.parse(added.stdout) as { source: { id: string; routingKey: string }; secret: string; webhookUrl: string };
  t.equal(source.source.routingKey, `github:${APP_ID}`);
  t.equal(source.webhookUrl, `${relayUrl}/webhook/acme/github`);

  started.push(await startProgram(join(REPO_ROOT, 'bin/svc-orchestrator.ts'), 'svc-orchestrator', { env: orchEnv, readyTimeoutMs: 60_000 }));

  const runs = async (): Promise<RunsList['runs']> => {
    const out = await admin(['runs', 'list', '--json', '--limit', '100']);
    if (out.code !== 0) throw new Error(out.stderr);
    return (JSON.parse(out.stdout) as RunsList).runs;
  };
  const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const value = await probe();
      if (value !== undefined) return value;
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  /** POST as GitHub does: its header names, the App as the hook target, HMAC of the exact bytes. */
  const post = async (event: string, payload: unknown, deliveryId = randomUUID()) => {
    const body = Buffer.from(JSON.stringify(payload));
    const res = await fetch(source.webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'GitHub-Hookshot/e2e',
        'X-GitHub-Event': event,
        'X-GitHub-Delivery': deliveryId,
        'X-GitHub-Hook-ID': '1',
        'X-GitHub-Hook-Installation-Target-ID': APP_ID,
        'X-GitHub-Hook-Installation-Target-Type': 'integration',
        'X-Hub-Signature-256': `sha256=${createHmac('sha256', source.secret).update(body).digest('hex')}`,
      },
      body,
    });
    return { status: res.status, body: await res.text(), deliveryId };
  };
  /** The relay learns the source from the orchestrator's hello; until then it may answer 404. */
  const postAccepted = (event: string, payload: unknown) =>
    waitFor(`the relay to accept a ${event}`, async () => {
      const res = await post(event, payload);
      return res.status === 200 ? res : undefined;
    });

  await t.test('signed push → relay → orchestrator → a run with queued jobs; lock read at the sha', async (t) => {
    const res = await postAccepted('push', pushPayload({ after: SHA_B, ref: 'refs/heads/main' }));
    t.equal(res.status, 200, res.body);
    const run = await waitFor('a run for the push', async () => (await runs()).find((r) => r.sha === SHA_B && r.deliveryId === res.deliveryId));
    t.equal(run.workflow, 'ci');
    t.equal(run.trustTier, 'trusted');
    t.ok(run.jobs.some((j) => j.status === 'queued'), 'a queued job');
    t.same(run.jobs.filter((j) => j.kind === 'job').map((j) => j.name).sort(), ['build', 'test'], 'the jobs of the lock at that sha');
    t.ok(fake.log.some((l) => l.includes(`ref=${SHA_B}`) && l.includes('/contents/')), 'the lock was read through the contents API at the sha');
    t.ok(fake.calls.access_tokens >= 1, 'an installation token was minted with the App key');
    const record = (await db.pool.one(sql.unsafe`select status, event_type from webhook_deliveries where delivery_id = ${res.deliveryId}`)) as { status: string; event_type: string };
    t.same(record, { status: 'matched', event_type: 'push' });
    // A bad signature is refused at the orchestrator and answered 401 by the relay (another body:
    // the relay answers a repeated body inside its dedup window as a duplicate).
    const forged = await fetch(source.webhookUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-GitHub-Event': 'push', 'X-GitHub-Delivery': randomUUID(), 'X-GitHub-Hook-Installation-Target-ID': APP_ID, 'X-GitHub-Hook-Installation-Target-Type': 'integration', 'X-Hub-Signature-256': `sha256=${'0'.repeat(64)}` },
      body: JSON.stringify(pushPayload({ after: SHA_B, ref: 'refs/heads/forged' })),
    });
    t.equal(forged.status, 401);
  });

  await t.test('pull request from a fork: trust unknown, the base lock, head compared', async (t) => {
    const pr = pullRequestPayload({ headRepo: 'mallory/app', headRef: 'evil' });
    const res = await postAccepted('pull_request', pr);
    t.equal(res.status, 200, res.body);
    const run = await waitFor('a run for the pull request', async () => (await runs()).find((r) => r.deliveryId === res.deliveryId));
    t.equal(run.trustTier, 'unknown');
    t.equal(run.isFork, 'true');
    t.equal(run.workflowSha, SHA_B, 'workflows come from the base commit');
    t.same(run.jobs.filter((j) => j.kind === 'job').map((j) => j.name).sort(), ['build', 'test'], 'the base lock, not the fork head');
    t.equal(run.workflowModified, true, 'the head lock differs: recorded as workflow_modified');
    t.ok(fake.log.some((l) => l.includes(`ref=${SHA_A}`) && l.includes('/contents/')), 'the head lock was fetched to compare');
  });

  await t.test('GitHub unreachable for a minute: pushes that arrive meanwhile all become runs once it is back, sent once', async (t) => {
    const shas = ['1', '2', '3', '4'].map((c) => c.repeat(40));
    for (const sha of shas) fake.addCommit('acme/app', sha, { parent: SHA_B, files: { '.svc/svc.lock.json': baseLock } });
    await fake.pause();
    const sent: string[] = [];
    for (const sha of shas) {
      const res = await post('push', pushPayload({ after: sha, ref: 'refs/heads/outage' }));
      t.equal(res.status, 200, `accepted while GitHub is down: ${res.body}`);
      sent.push(res.deliveryId);
    }
    const records = async () =>
      (await db.pool.any(sql.unsafe`select d.status, coalesce(r.attempts, 0) as attempts from webhook_deliveries d
        left join webhook_delivery_retries r using (org_id, delivery_id) where d.delivery_id = any(${sql.array(sent, 'text')})`)) as Array<{ status: string; attempts: number }>;
    // Retried and failed again during the outage: kept, never dropped, never answered 429.
    await waitFor('a second failed attempt of every push', async () => {
      const rows = await records();
      return rows.length === shas.length && rows.every((r) => r.status === 'retrying' && r.attempts >= 2) ? rows : undefined;
    });
    t.equal((await runs()).filter((r) => sent.includes(r.deliveryId)).length, 0, 'no run while the lock cannot be read');
    // The rest of its minute passes: the kept deliveries' clocks (first failure, next attempt)
    // move a minute back, and each is retried (failing again) as the minute-old delivery it now is.
    const moved = await db.pool.query(sql.unsafe`update webhook_delivery_retries
      set created_at = created_at - interval '1 minute', next_attempt_at = next_attempt_at - interval '1 minute'
      where delivery_id = any(${sql.array(sent, 'text')})`);
    t.equal(moved.rowCount, shas.length, 'every push is kept');
    const aged = await waitFor('a failed attempt of every push a minute into the outage', async () => {
      const rows = (await db.pool.any(sql.unsafe`select d.status, r.state, r.attempts, r.created_at < now() - interval '1 minute' as old
        from webhook_deliveries d join webhook_delivery_retries r using (org_id, delivery_id)
        where d.delivery_id = any(${sql.array(sent, 'text')}) and r.lease_node is null`)) as Array<{ status: string; state: string; attempts: number; old: boolean }>;
      return rows.length === shas.length && rows.every((r) => r.attempts >= 3) ? rows : undefined;
    });
    t.same(aged.map((r) => [r.status, r.state, r.old]), shas.map(() => ['retrying', 'waiting', true]), 'a minute old, still kept and retried: nothing given up or dropped');
    await fake.resume();
    // Back: each back-off the outage left is moved to now instead of waited out (a kept row not
    // leased by a retry in flight, which the retry worker takes at its next poll).
    const made = await waitFor('a run for every push', async () => {
      await db.pool.query(sql.unsafe`update webhook_delivery_retries set next_attempt_at = now()
        where delivery_id = any(${sql.array(sent, 'text')}) and lease_node is null and next_attempt_at > now()`);
      const found = (await runs()).filter((r) => sent.includes(r.deliveryId));
      return found.length === shas.length ? found : undefined;
    }, 120_000);
    t.same(made.map((r) => r.sha).sort(), [...shas].sort(), 'one run per push, at its own commit');
    t.same((await records()).map((r) => r.status), shas.map(() => 'matched'), 'every record finished matched');
    const kept = (await db.pool.one(sql.unsafe`select count(*)::int as n from webhook_delivery_retries where delivery_id = any(${sql.array(sent, 'text')})`)) as { n: number };
    t.equal(kept.n, 0, 'nothing left kept');
  });
});
