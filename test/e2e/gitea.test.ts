// The example Gitea provider end to end, loaded as a third-party plugin: svc-relay and
// svc-orchestrator on real PostgreSQL, the orchestrator's config file naming the plugin's module
// path (`plugins.modules`), a `gitea` source added with `svc-admin source add gitea`, and the
// Gitea API stand-in serving a real git repository whose commit holds a compiled lock. A push
// signed as Gitea signs (X-Gitea-Signature, bare hex HMAC of the body) becomes a run with queued
// jobs; a forged one is refused; a pull request from a fork runs the base commit's workflows.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { buildLock, serializeLock } from '../../workflow/lock/lock-file.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { startFakeGitea } from '../fixtures/fake-gitea.ts';
import { GITEA_PLUGIN_PATH, linkSvcIntoExample } from '../fixtures/gitea-example.ts';
import { giteaPullRequestPayload, giteaPushPayload } from '../fixtures/gitea-payloads.ts';
import { createGitRemote } from '../fixtures/git-repos.ts';
import { job, trig, workflow } from '../fixtures/locks.ts';
import { REPO_ROOT, runProgram, startProgram, type StartedProgram } from '../fixtures/programs.ts';

t.setTimeout(1_200_000);
await linkSvcIntoExample();

const TOKEN = 'gitea-e2e-token-5d8c1f0a';
const baseLock = serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('ci', [trig.push(), trig.pr()], [job('build'), job('test')])] }));
// The fork's head changes the workflows: its run must still come from the base lock.
const headLock = serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('ci', [trig.push(), trig.pr()], [job('build'), job('test'), job('exfiltrate')])] }));

interface RunsList {
  runs: Array<{ runId: string; sha: string; workflow: string; workflowSha: string; trustTier: string; isFork: string; provider?: string; jobs: Array<{ name: string; kind: string; status: string }> }>;
}

await eachDatabase(t, async (t, db) => {
  const root = await mkdtemp(join(tmpdir(), 'svc-e2e-gitea-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const fake = await startFakeGitea({ token: TOKEN });
  t.teardown(() => fake.close());
  const remote = await createGitRemote(t);
  const baseSha = await remote.commit({ '.svc/svc.lock.json': baseLock, 'README.md': 'base\n' }, 'add ci');
  const headSha = await remote.commit({ '.svc/svc.lock.json': headLock, 'README.md': 'head\n' }, 'change ci');
  fake.addRepository('acme/app', remote.bare);
  await remote.push();

  const started: StartedProgram[] = [];
  t.teardown(async () => {
    for (const p of started.reverse()) await p.stop().catch(() => undefined);
  });
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, SVC_SERVER_LOG_LEVEL: 'warn' };
  delete baseEnv['SVC_PLATFORM_URL'];
  delete baseEnv['SVC_PLATFORM_TOKEN'];

  const relayEnv = { ...baseEnv, SVC_RELAY_DATABASE_URL: await db.extraDatabase(), SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: join(root, 'relay') };
  const relay = await startProgram(join(REPO_ROOT, 'bin/svc-relay.ts'), 'svc-relay', { env: relayEnv, readyTimeoutMs: 60_000 });
  started.push(relay);
  const org = await runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), ['relay', 'org', 'create', 'acme', '--json'], { env: relayEnv, timeoutMs: 60_000 });
  t.equal(org.code, 0, org.stderr);

  // The operator's config file: the plugin by module path, and its config slice.
  const configFile = join(root, 'svc.yaml');
  await writeFile(configFile, ['plugins:', '  modules:', `    - ${JSON.stringify(GITEA_PLUGIN_PATH)}`, '  config:', '    "provider:gitea":', '      requestTimeoutMs: 30000', ''].join('\n'));
  const orchEnv = {
    ...baseEnv,
    SVC_CONFIG_FILE: configFile,
    SVC_DATABASE_URL: db.url,
    SVC_DATA_DIR: join(root, 'orch'),
    SVC_SECRET_KEY: randomBytes(32).toString('base64'),
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_PLATFORM_URL: relay.url,
    SVC_PLATFORM_TOKEN: (JSON.parse(org.stdout) as { token: string }).token,
    SVC_INSTANCE_ID: 'e2e-orch-gitea',
  };
  const admin = (args: string[]) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: orchEnv, timeoutMs: 60_000 });

  // Gitea names no hook target, so the org's one Gitea source takes target `*` (`gitea:*`).
  const added = await admin(['source', 'add', 'gitea', '--org', 'acme', '--target-id', '*', '--setting', `baseUrl=${fake.url}`, '--credential', `token=${TOKEN}`, '--json']);
  t.equal(added.code, 0, added.stderr);
  const source = JSON.parse(added.stdout) as { source: { id: string; routingKey: string }; secret: string; webhookUrl: string };
  t.equal(source.source.routingKey, 'gitea:*');
  t.equal(source.webhookUrl, `${relay.url}/webhook/acme/gitea`);

  started.push(await startProgram(join(REPO_ROOT, 'bin/svc-orchestrator.ts'), 'svc-orchestrator', { env: orchEnv, readyTimeoutMs: 60_000 }));

  const runs = async (): Promise<RunsList['runs']> => {
    const out = await admin(['runs', 'list', '--json', '--limit', '100']);
    if (out.code !== 0) throw new Error(out.stderr);
    return (JSON.parse(out.stdout) as RunsList).runs;
  };
  const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 90_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const value = await probe();
      if (value !== undefined) return value;
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  /** POST as Gitea does: its header names, a delivery UUID, bare hex HMAC of the exact bytes. */
  const post = async (event: string, payload: unknown, signature?: string) => {
    const body = Buffer.from(JSON.stringify(payload));
    const res = await fetch(source.webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Go-http-client/1.1',
        'X-Gitea-Event': event,
        'X-Gitea-Event-Type': event,
        'X-Gitea-Delivery': randomUUID(),
        'X-Gitea-Signature': signature ?? createHmac('sha256', source.secret).update(body).digest('hex'),
      },
      body,
    });
    return { status: res.status, body: await res.text() };
  };
  /** The relay learns the source from the orchestrator's hello; until then it may answer 404. */
  const postAccepted = (event: string, payload: unknown) =>
    waitFor(`the relay to accept a ${event}`, async () => {
      const res = await post(event, payload);
      return res.status === 200 ? res : undefined;
    });

  await t.test('Gitea-signed push → relay → orchestrator (plugin from its module path) → a run with queued jobs', async (t) => {
    const res = await postAccepted('push', giteaPushPayload({ after: baseSha, before: '0'.repeat(40), baseUrl: fake.url, commits: [{ id: baseSha, message: 'add ci\n', added: ['.svc/svc.lock.json', 'README.md'] }] }));
    t.equal(res.status, 200, res.body);
    const run = await waitFor('a run for the push', async () => (await runs()).find((r) => r.sha === baseSha));
    t.equal(run.workflow, 'ci');
    t.equal(run.trustTier, 'trusted');
    t.ok(run.jobs.some((j) => j.status === 'queued'), 'a queued job');
    t.same(run.jobs.filter((j) => j.kind === 'job').map((j) => j.name).sort(), ['build', 'test'], 'the jobs of the lock at that commit');
    t.ok(fake.log.includes(`GET /api/v1/repos/acme/app/contents/.svc/svc.lock.json?ref=${baseSha}`), 'the lock was read through the Gitea contents API at the sha');
    const record = (await db.pool.one(sql.unsafe`select status, event_type, provider_kind from webhook_deliveries where sha = ${baseSha}`)) as Record<string, string>;
    t.same(record, { status: 'matched', event_type: 'push', provider_kind: 'gitea' });

    // Another body (the relay answers a repeated body inside its dedup window as a duplicate).
    const forged = await post('push', giteaPushPayload({ after: baseSha, ref: 'refs/heads/forged', baseUrl: fake.url }), '0'.repeat(64));
    t.equal(forged.status, 401, 'a forged signature is refused');
  });

  await t.test('pull request from a fork: trust unknown, the base lock, the head lock compared', async (t) => {
    const pr = giteaPullRequestPayload({ action: 'synchronized', headRepo: 'mallory/app', headRef: 'evil', headSha, baseSha, baseUrl: fake.url });
    const res = await postAccepted('pull_request', pr);
    t.equal(res.status, 200, res.body);
    const run = await waitFor('a run for the pull request', async () => (await runs()).find((r) => r.sha === headSha));
    t.equal(run.trustTier, 'unknown');
    t.equal(run.isFork, 'true');
    t.equal(run.workflowSha, baseSha, 'workflows come from the base commit');
    t.same(run.jobs.filter((j) => j.kind === 'job').map((j) => j.name).sort(), ['build', 'test'], 'the base lock, not the fork head');
    t.ok(fake.log.includes(`GET /api/v1/repos/acme/app/contents/.svc/svc.lock.json?ref=${headSha}`), 'the head lock was fetched to compare');
    const record = (await db.pool.one(sql.unsafe`select status, event_type from webhook_deliveries where sha = ${headSha}`)) as Record<string, string>;
    t.same(record, { status: 'matched', event_type: 'pull_request' });
  });
});
