// Master-key rotation over every sealed store, end to end with the real programs (svc-orchestrator,
// svc-admin) on real PostgreSQL (docs/master-key.md). Under key k1: a GitHub App source (the fake
// GitHub API over HTTP; its private key is a sealed provider credential), a generic HMAC source, a
// git source (a real bare repository), all three added with `svc-admin source add`; a secret, a
// run-status webhook secret and a sealed config field; the orchestrator's db-custody signing key.
// Then `svc-admin rotate-key` with SVC_SECRET_KEY=k2 SVC_SECRET_KEY_OLD=k1 prints one count line
// per store; the old key is removed and the orchestrator restarted with k2 alone: every source
// verifies a signed webhook (and a forged one is still refused), the GitHub App key mints
// installation tokens, the run-status webhook arrives signed with its secret, a job receives the
// secret, and the config version and signing key open.
// A start with only the removed key stops, naming the store.
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { RUN_STATUS_WEBHOOK_HEADERS } from '../../schemas/run-status-webhook.ts';
import { buildLock, serializeLock } from '../../workflow/lock/lock-file.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { readConfigVersion, writeConfigVersion } from '../../kernel/orchestrator/config/versions.ts';
import { setStatusWebhook } from '../../kernel/orchestrator/forge-status/index.ts';
import { createContext, setSecret } from '../../kernel/orchestrator/secrets/index.ts';
import { parseMasterKey } from '../../kernel/services/crypto/sealing.ts';
import { eachDatabase, type Test } from '../fixtures/db.ts';
import { generateAppKeyPair, startFakeGithub } from '../fixtures/fake-github.ts';
import { createGitRemote } from '../fixtures/git-repos.ts';
import { pushPayload, SHA_B } from '../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../fixtures/locks.ts';
import { REPO_ROOT, runProgram, startProgram, type StartedProgram } from '../fixtures/programs.ts';
import { insertRun, until } from '../fixtures/runs.ts';
import { TestAgent } from '../fixtures/test-agent.ts';

// Two database kinds, three orchestrator starts and five svc-admin runs each, on busy machines.
t.setTimeout(1_800_000);

const APP_ID = '5151';
const INSTALLATION = '99';
const SECRET_VALUE = 'deploy-token-sealed-value-91c2';
const STATUS_SECRET = 'status-hook-secret-0123456789';
const JOIN_TOKEN = 'cluster-join-token-0123456789abcdef';
// Jobs of webhook runs wait for an agent label nobody has: only the sealed values are exercised.
const lockText = serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('ci', [trig.push()], [{ ...job('build'), runsOn: ['nobody-has-this'] }])] }));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const hubSignature = (secret: string, body: Buffer) => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

await eachDatabase(t, async (t, db) => {
  const root = await mkdtemp(join(tmpdir(), 'svc-e2e-master-key-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const keys = generateAppKeyPair();
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation(INSTALLATION, ['acme/app']);
  fake.addCommit('acme/app', SHA_B, { files: { '.svc/svc.lock.json': lockText } });
  const remote = await createGitRemote(t);
  const gitSha = await remote.commit({ '.svc/svc.lock.json': lockText }, 'add ci');
  await remote.push();

  // Receives run-status webhooks: what arrived, with its headers, to check the signature.
  const statusHooks: Array<{ headers: IncomingHttpHeaders; body: Buffer }> = [];
  const receiver = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      statusHooks.push({ headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => receiver.close(() => r())));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/status`;

  const k1 = randomBytes(32).toString('base64');
  const k2 = randomBytes(32).toString('base64');
  const port = await freePort();
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, SVC_SERVER_LOG_LEVEL: 'warn' };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_PLATFORM_TOKEN', 'SVC_SECRET_KEY', 'SVC_SECRET_KEY_OLD', 'SVC_SECRET_KEY_FILE', 'SVC_SECRET_KEY_FILE_OLD']) delete baseEnv[name];
  const env = (keyEnv: Record<string, string>): NodeJS.ProcessEnv => ({
    ...baseEnv,
    SVC_DATABASE_URL: db.url,
    SVC_DATA_DIR: join(root, 'orch'),
    SVC_SERVER_PORT: String(port),
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_INSTANCE_ID: 'e2e-master-key',
    SVC_AGENT_AUTH: 'none',
    // Signing on: the orchestrator generates a db-custody key sealed under the master key.
    SVC_ORCHESTRATOR_PROVENANCE_ISSUER: `http://127.0.0.1:${port}`,
    ...keyEnv,
  });
  const admin = (args: string[], keyEnv: Record<string, string>) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: env(keyEnv), timeoutMs: 60_000 });
  const started: StartedProgram[] = [];
  t.teardown(async () => {
    for (const p of started.reverse()) await p.stop().catch(() => undefined);
  });
  const startOrch = async (keyEnv: Record<string, string>) => {
    const orch = await startProgram(join(REPO_ROOT, 'bin/svc-orchestrator.ts'), 'svc-orchestrator', { env: env(keyEnv), readyTimeoutMs: 300_000 });
    started.push(orch);
    return orch;
  };
  const base = `http://127.0.0.1:${port}`;

  // Everything sealed under k1.
  const onlyK1 = { SVC_SECRET_KEY: k1 };
  let orch = await startOrch(onlyK1);
  const ok = async (args: string[], keyEnv: Record<string, string> = onlyK1) => {
    const out = await admin(args, keyEnv);
    t.equal(out.code, 0, `svc-admin ${args.join(' ')}: ${out.stderr}`);
    return out;
  };
  const keyFile = join(root, 'app.pem');
  await writeFile(keyFile, keys.privateKeyPem, { mode: 0o600 });
  const github = JSON.parse((await ok(['source', 'add', 'github', '--org', 'acme', '--app-id', APP_ID, '--private-key-file', keyFile, '--setting', `apiBaseUrl=${fake.url}`, '--json'])).stdout) as { source: { id: string }; secret: string };
  const generic = JSON.parse((await ok(['source', 'add', 'generic', '--org', 'acme', '--source-id', 'deploys', '--event-type', 'header:x-event-type', '--json'])).stdout) as { source: { id: string }; secret: string };
  const git = JSON.parse((await ok(['source', 'add', 'git', '--org', 'acme', '--setting', `remoteUrl=${remote.url}`, '--setting', 'repository=acme/app', '--json'])).stdout) as { source: { id: string }; secret: string };
  // The rest through the same store functions the commands use (fewer program starts: each is
  // slow on a busy machine; the commands themselves are tested in test/admin-cli/).
  const k1Key = parseMasterKey(k1);
  await createContext(db.pool, { name: 'deploy', branches: ['main'], repositories: ['acme/*'] });
  await setSecret(db.pool, k1Key, 'deploy', 'TOKEN', SECRET_VALUE);
  await setStatusWebhook(db.pool, k1Key, github.source.id, { url: receiverUrl, secret: STATUS_SECRET });
  const version = await writeConfigVersion(db.pool, k1Key, { config: { cluster: { joinToken: JOIN_TOKEN } }, createdBy: 'cli:set', description: 'a sealed field' });

  /** Signed deliveries to every source, each accepted (200) and recorded under its expected status. */
  const verifyEverySource = async (t: Test) => {
    const deliveries: Record<string, string> = {};
    const body = (payload: unknown) => Buffer.from(JSON.stringify(payload));
    const ghBody = body(pushPayload({ after: SHA_B, ref: 'refs/heads/main' }));
    const ghDelivery = randomUUID();
    const gh = await fetch(`${base}/webhook/acme/github`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-GitHub-Event': 'push', 'X-GitHub-Delivery': ghDelivery, 'X-GitHub-Hook-Installation-Target-ID': APP_ID, 'X-GitHub-Hook-Installation-Target-Type': 'integration', 'X-Hub-Signature-256': hubSignature(github.secret, ghBody) },
      body: ghBody,
    });
    t.equal(gh.status, 200, `github delivery accepted: ${await gh.text()}`);
    deliveries[ghDelivery] = 'matched';

    const gBody = body({ sender: 'deployer', environment: 'prod' });
    const gDelivery = randomUUID();
    const g = await fetch(`${base}/webhook/acme/generic/deploys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-event-type': 'deployed', 'x-delivery-id': gDelivery, 'x-hub-signature-256': hubSignature(generic.secret, gBody) },
      body: gBody,
    });
    t.equal(g.status, 200, `generic delivery accepted: ${await g.text()}`);

    const gitBody = body(pushPayload({ after: gitSha, ref: 'refs/heads/main', repository: 'acme/app' }));
    const gitDelivery = randomUUID();
    const gr = await fetch(`${base}/webhook/acme/git`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Provider-Event': 'push', 'X-Provider-Delivery': gitDelivery, 'X-Provider-Hook-Installation-Target-ID': git.source.id, 'X-Hub-Signature-256': hubSignature(git.secret, gitBody) },
      body: gitBody,
    });
    t.equal(gr.status, 200, `git delivery accepted: ${await gr.text()}`);
    deliveries[gitDelivery] = 'matched';

    for (const [delivery, status] of Object.entries(deliveries)) {
      const row = await until(`delivery ${delivery} processed`, async () => {
        const r = (await db.pool.maybeOne(sql.unsafe`SELECT status, message FROM webhook_deliveries WHERE delivery_id = ${delivery}`)) as { status: string; message: string | null } | null;
        return r !== null && r.status !== 'processing' ? r : undefined;
      });
      t.equal(row.status, status, `${delivery}: ${row.message ?? ''}`);
    }
    const generics = (await db.pool.any(sql.unsafe`SELECT status FROM webhook_deliveries WHERE source_id = ${generic.source.id} ORDER BY received_at DESC LIMIT 1`)) as Array<{ status: string }>;
    t.notMatch(generics[0]?.status ?? 'missing', /^rejected_|missing/, `the generic delivery verified (${generics[0]?.status})`);

    const forged = await fetch(`${base}/webhook/acme/generic/deploys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-event-type': 'deployed', 'x-hub-signature-256': hubSignature('not-the-secret-0123456789', gBody) },
      body: gBody,
    });
    t.equal(forged.status, 401, 'a delivery signed with another secret is still refused');
  };

  await t.test('under k1: every source verifies its webhooks', async (t) => {
    await verifyEverySource(t);
  });
  await orch.stop();

  await t.test('rotate-key with SVC_SECRET_KEY=k2 SVC_SECRET_KEY_OLD=k1: one count line per store', async (t) => {
    const rotated = await ok(['rotate-key'], { SVC_SECRET_KEY: k2, SVC_SECRET_KEY_OLD: k1 });
    t.equal(
      rotated.stdout,
      [
        'Re-encrypted 1 provenance signing keys.',
        'Re-encrypted 1 secrets.',
        'Re-encrypted 3 source webhook secrets.',
        'Re-encrypted 1 source provider credentials.',
        'Re-encrypted 1 run-status webhook secrets.',
        'Re-encrypted 1 sealed config fields.',
        '',
      ].join('\n'),
    );
    // The old key removed: every value opens with k2 alone (the sweep would name one that does not).
    const json = await ok(['rotate-key', '--json'], { SVC_SECRET_KEY: k2 });
    t.same(JSON.parse(json.stdout), { signingKeys: 1, secrets: 1, sourceSecrets: 3, sourceCredentials: 1, statusWebhooks: 1, configFields: 1 });
  });

  await t.test('restarted with k2 alone: sources, credentials, secrets, status webhook, config and signing key all open', async (t) => {
    const tokensBefore = fake.calls.access_tokens;
    const hooksBefore = statusHooks.length;
    orch = await startOrch({ SVC_SECRET_KEY: k2 });
    await verifyEverySource(t);
    t.ok(fake.calls.access_tokens > tokensBefore, 'the GitHub App private key (a sealed provider credential) minted an installation token');

    const signed = await until('a run-status webhook after the restart', async () => statusHooks.slice(hooksBefore).find((h) => h.headers[RUN_STATUS_WEBHOOK_HEADERS.signature] !== undefined));
    t.equal(signed.headers[RUN_STATUS_WEBHOOK_HEADERS.signature], hubSignature(STATUS_SECRET, signed.body), 'signed with the run-status webhook secret');

    const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: unknown[] };
    t.equal(jwks.keys.length, 1, 'the signing key is served');
    t.match((await readConfigVersion(db.pool, [{ name: 'current', key: parseMasterKey(k2) }], version.version))?.config, { cluster: { joinToken: JOIN_TOKEN } }, 'the sealed config field opens with k2 alone');

    const agent = await TestAgent.online({ url: base, agentId: 'rotation-agent', labels: ['rotation-e2e'] });
    t.teardown(() => agent.close());
    const run = await insertRun(db.pool, { jobs: [{ name: 'deploy', runsOn: ['rotation-e2e'], lock: { contexts: ['deploy'] } }] });
    const jobId = run.jobs['deploy']!.id;
    const dispatch = await agent.waitFor('job.dispatch', (m) => m.jobId === jobId);
    t.same(dispatch.jobConfig.secrets, { 'deploy:TOKEN': SECRET_VALUE, TOKEN: SECRET_VALUE }, 'the job receives the secret');
    agent.jobStatus(jobId, 'completed');
    await orch.stop();
  });

  await t.test('a start with only the removed key stops, naming the store', async (t) => {
    const refused = await startOrch(onlyK1).then(
      () => undefined,
      (error: unknown) => String(error),
    );
    t.ok(refused !== undefined, 'the orchestrator did not start');
    t.match(refused, /SVC_ERR_MASTER_KEY_MISMATCH/);
    t.match(refused, /store signing_keys: signing key \S+ opens with none of the configured master keys/);
    t.match(refused, /SVC_SECRET_KEY_OLD/);
  });
});
