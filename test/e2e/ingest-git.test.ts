// Webhook ingest end to end with real processes: svc-relay and svc-orchestrator on real
// PostgreSQL, an org provisioned with `svc-admin relay org create`, a git source added with
// `svc-admin source add git`, a bare repository with a compiled `.svc/` and the
// `svc hook post-receive` hook; a `git push` becomes a run with queued jobs. Then durability:
// with the orchestrator stopped pushes are buffered by the relay (restarted meanwhile) and
// replayed once each when the orchestrator comes back.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildLock, serializeLock } from '../../workflow/lock/lock-file.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { createGitRemote } from '../fixtures/git-repos.ts';
import { job, trig, workflow } from '../fixtures/locks.ts';
import { REPO_ROOT, runProgram, startProgram, type StartedProgram } from '../fixtures/programs.ts';

t.setTimeout(1_200_000);

const lockText = serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('ci', [trig.push()], [job('build'), job('test')])] }));

interface RunsList {
  runs: Array<{ runId: string; deliveryId: string; sha: string; workflow: string; jobs: Array<{ kind: string; status: string }> }>;
}

await eachDatabase(t, async (t, db) => {
  const root = await mkdtemp(join(tmpdir(), 'svc-e2e-ingest-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const relayDb = await db.extraDatabase();
  const started: StartedProgram[] = [];
  t.teardown(async () => {
    for (const p of started.reverse()) await p.stop().catch(() => undefined);
  });
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, SVC_SERVER_LOG_LEVEL: 'warn' };
  delete baseEnv['SVC_PLATFORM_URL'];
  delete baseEnv['SVC_PLATFORM_TOKEN'];

  // The first start picks a free port (no race with other files); restarts reuse it.
  const relayEnv: NodeJS.ProcessEnv = { ...baseEnv, SVC_RELAY_DATABASE_URL: relayDb, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: join(root, 'relay') };
  const startRelay = async () => {
    const relay = await startProgram(join(REPO_ROOT, 'bin/svc-relay.ts'), 'svc-relay', { env: relayEnv, readyTimeoutMs: 60_000 });
    started.push(relay);
    return relay;
  };
  let relay = await startRelay();
  relayEnv['SVC_RELAY_PORT'] = new URL(relay.url).port;
  const relayUrl = relay.url;

  const org = await runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), ['relay', 'org', 'create', 'acme', '--json'], { env: relayEnv, timeoutMs: 60_000 });
  t.equal(org.code, 0, org.stderr);
  const platformToken = (JSON.parse(org.stdout) as { token: string }).token;

  const remote = await createGitRemote(t);
  const orchEnv = {
    ...baseEnv,
    SVC_DATABASE_URL: db.url,
    SVC_DATA_DIR: join(root, 'orch'),
    SVC_SECRET_KEY: randomBytes(32).toString('base64'),
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_PLATFORM_URL: relayUrl,
    SVC_PLATFORM_TOKEN: platformToken,
    SVC_INSTANCE_ID: 'e2e-orch',
  };
  const admin = (args: string[]) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: orchEnv, timeoutMs: 60_000 });

  const added = await admin(['source', 'add', 'git', '--org', 'acme', '--setting', `remoteUrl=${remote.url}`, '--setting', 'repository=acme/app', '--json']);
  t.equal(added.code, 0, added.stderr);
  const source = JSON.parse(added.stdout) as { source: { id: string }; secret: string; webhookUrl: string };
  t.equal(source.webhookUrl, `${relayUrl}/webhook/acme/git`);

  const secretFile = join(root, 'hook.secret');
  await writeFile(secretFile, source.secret, { mode: 0o600 });
  const install = await runProgram(
    join(REPO_ROOT, 'bin/svc.ts'),
    ['hook', 'post-receive', '--install', remote.bare, '--webhook-url', source.webhookUrl, '--secret-file', secretFile, '--source-id', source.source.id, '--repository', 'acme/app', '--remote-url', remote.url],
    { env: baseEnv, timeoutMs: 60_000 },
  );
  t.equal(install.code, 0, install.stderr);

  const startOrch = async () => {
    const orch = await startProgram(join(REPO_ROOT, 'bin/svc-orchestrator.ts'), 'svc-orchestrator', { env: orchEnv, readyTimeoutMs: 60_000 });
    started.push(orch);
    return orch;
  };
  let orch = await startOrch();

  const runs = async (): Promise<RunsList['runs']> => {
    const out = await admin(['runs', 'list', '--json', '--limit', '100']);
    if (out.code !== 0) throw new Error(out.stderr);
    return (JSON.parse(out.stdout) as RunsList).runs;
  };
  const waitFor = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (let i = 0; Date.now() < deadline; i += 1) {
      const value = await probe();
      if (value !== undefined) return value;
      await new Promise((r) => setTimeout(r, 500));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  await t.test('git push → relay → orchestrator → a run with queued jobs', async (t) => {
    // The orchestrator announces its sources on connect; give the relay a moment to know them.
    const sha = await remote.commit({ '.svc/svc.lock.json': lockText, 'README.md': 'hello' }, 'add ci');
    const pushed = await waitFor('the relay to accept the push', async () => {
      try {
        return await remote.push();
      } catch (error) {
        // A push is accepted by git even when the hook fails; only a git failure lands here.
        throw error;
      }
    });
    t.ok(pushed);
    const run = await waitFor('a run for the pushed commit', async () => (await runs()).find((r) => r.sha === sha));
    t.equal(run.workflow, 'ci');
    t.ok(run.jobs.some((j) => j.status === 'queued'), 'a queued job (the build on a cold source cache)');
    t.ok(run.jobs.filter((j) => j.kind === 'job').every((j) => j.status === 'waiting' || j.status === 'queued'));
    const detail = await admin(['runs', 'show', run.runId, '--json']);
    t.equal(detail.code, 0, detail.stderr);
  });

  await t.test('durability: buffered while the orchestrator is down, relay restarted, replayed once each', async (t) => {
    await orch.stop();
    const shas: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      shas.push(await remote.commit({ 'README.md': `change ${i}` }, `change ${i}`));
      const pushed = await remote.push();
      t.match(`${pushed.stdout}\n${pushed.stderr}`, /buffered|200/i, 'the relay answers 200 buffered');
    }
    await relay.stop();
    relay = await startRelay();
    orch = await startOrch();
    const replayed = await waitFor('every buffered push to become a run', async () => {
      const list = await runs();
      return shas.every((s) => list.some((r) => r.sha === s)) ? list : undefined;
    }, 90_000);
    for (const sha of shas) t.equal(replayed.filter((r) => r.sha === sha).length, 1, `one run for ${sha.slice(0, 8)}`);
    const deliveries = (await db.pool.any(sql.unsafe`select delivery_id, status from webhook_deliveries where sha = any(${sql.array(shas, 'text')})`)) as Array<{ delivery_id: string; status: string }>;
    t.equal(deliveries.length, 3, 'one delivery record each');
    t.ok(deliveries.every((d) => d.status === 'matched'));
  });
});
