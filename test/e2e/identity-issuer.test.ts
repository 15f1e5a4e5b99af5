// End to end: a real orchestrator (HTTP on loopback) per custody kind mints a token through the
// identity service; separate processes (openid-client + jose in Node, and PyJWT when installed)
// discover the issuer over HTTP and verify it. Also: master-key rotation across restarts.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import t from 'tap';
import { startOrchestrator, type Orchestrator } from '../../kernel/orchestrator/app.ts';
import { identityServiceRef } from '../../kernel/orchestrator/service-refs.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../kernel/orchestrator/subsystems.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';
import { eachDatabase, inCi } from '../fixtures/db.ts';
import { startKmsServer } from '../fixtures/kms-server.ts';
import { insertRunJob, silent } from '../kernel/orchestrator/identity/fixtures.ts';

const NODE_VERIFIER = fileURLToPath(new URL('../kernel/orchestrator/identity/verifier-child.ts', import.meta.url));
const PY_VERIFIER = fileURLToPath(new URL('../kernel/orchestrator/identity/verifier-child.py', import.meta.url));
const SIGNER = fileURLToPath(new URL('../fixtures/signer-command.mjs', import.meta.url));
const PYTHON = '/usr/bin/python3';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const pythonJwt = await execa(PYTHON, ['-c', 'import jwt, cryptography'], { reject: false });
const pythonSkip = pythonJwt.exitCode === 0 ? false : 'python3-jwt is not installed (apt-get install -y python3-jwt)';
if (pythonSkip && inCi) throw new Error(`CI needs ${pythonSkip}`);

const dataDir = await mkdtemp(join(tmpdir(), 'svc-identity-e2e-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const kms = await startKmsServer();
t.teardown(() => kms.stop());

async function boot(dbUrl: string, env: Record<string, string>): Promise<Orchestrator> {
  const port = await freePort();
  return startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_SERVER_PORT: String(port),
      SVC_DATA_DIR: dataDir,
      ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace('{port}', String(port))])),
    },
    cwd: dataDir,
    plugins: orchestratorPlugins,
    subsystems: ORCHESTRATOR_SUBSYSTEMS,
    logger: silent,
  });
}

async function verifyIn(program: 'node' | 'python', issuer: string, audience: string, token: string) {
  const result =
    program === 'node'
      ? await execa(process.execPath, [NODE_VERIFIER, issuer, audience, token], { timeout: 30_000 })
      : await execa(PYTHON, [PY_VERIFIER, issuer, audience, token], { timeout: 30_000 });
  return JSON.parse(result.stdout) as { ok: boolean; claims?: Record<string, unknown>; error?: string; metadata?: Record<string, unknown> };
}

await eachDatabase(t, async (t, db) => {
  const CUSTODY: Array<[string, Record<string, string>]> = [
    ['db', { SVC_ORCHESTRATOR_SIGNER_KIND: 'db' }],
    [
      'aws-kms',
      {
        SVC_ORCHESTRATOR_SIGNER_KIND: 'aws-kms',
        SVC_ORCHESTRATOR_KMS_KEY_ARN: kms.keyArn,
        SVC_ORCHESTRATOR_KMS_REGION: 'us-east-1',
        SVC_ORCHESTRATOR_KMS_ACCESS_KEY_ID: kms.accessKeyId,
        SVC_ORCHESTRATOR_KMS_SECRET_ACCESS_KEY: kms.secretAccessKey,
        SVC_ORCHESTRATOR_KMS_ENDPOINT: kms.url,
      },
    ],
    ['command', { SVC_ORCHESTRATOR_SIGNER_KIND: 'command', SVC_ORCHESTRATOR_SIGNER_COMMAND: `${process.execPath} ${SIGNER} ${join(dataDir, 'cmd-key.json')}` }],
  ];
  const masterKey = randomBytes(32).toString('base64');

  for (const [kind, env] of CUSTODY) {
    await t.test(`${kind} custody: a minted token verifies in separate processes via discovery`, async (t) => {
      const issuerFor = (port: string) => `http://127.0.0.1:${port}/tenant-a`;
      const orch = await boot(db.url, { ...env, SVC_SECRET_KEY: masterKey, SVC_ORCHESTRATOR_PROVENANCE_ISSUER: issuerFor('{port}') });
      t.teardown(() => orch.stop());
      const service = orch.get(identityServiceRef);
      if (!service) throw new Error('identity service missing');
      const issuer = service.issuer;
      t.match(issuer, /\/tenant-a$/);

      const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      t.equal(discovery['jwks_uri'], `${issuer}/.well-known/jwks.json`, 'jwks_uri carries the issuer path');
      const atRoot = await fetch(new URL('/.well-known/openid-configuration', issuer));
      t.equal(atRoot.status, 200, 'also served at the root (orchestrator not mounted under the path)');

      const { jobId, agentId, runId } = await insertRunJob(db.pool);
      const minted = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example.test' });
      if (!('token' in minted)) throw new Error(`deferred: ${minted.code}`);
      const node = await verifyIn('node', issuer, 'sts.example.test', minted.token);
      t.ok(node.ok, `node verifier: ${node.error ?? 'ok'}`);
      t.equal(node.claims?.['svc_run_id'], runId);
      for (const claim of Object.keys(node.claims ?? {})) {
        t.ok((discovery['claims_supported'] as string[]).includes(claim), `claims_supported lists ${claim}`);
      }
      const wrongAudience = await verifyIn('node', issuer, 'someone-else', minted.token);
      t.notOk(wrongAudience.ok, 'another audience is refused');
      const tampered = minted.token.slice(0, -4) + (minted.token.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      t.notOk((await verifyIn('node', issuer, 'sts.example.test', tampered)).ok, 'a tampered signature is refused');

      await t.test('python (PyJWT) verifier', { skip: pythonSkip }, async (t) => {
        const py = await verifyIn('python', issuer, 'sts.example.test', minted.token);
        t.ok(py.ok, `python verifier: ${py.error ?? 'ok'}`);
        t.equal(py.claims?.['sub'], 'repo:acme/widgets:ref:refs/heads/main:workflow:ci');
      });
    });
  }

  await t.test('no issuer: identity routes are absent', async (t) => {
    const orch = await boot(db.url, { SVC_SECRET_KEY: masterKey });
    t.teardown(() => orch.stop());
    t.equal(orch.get(identityServiceRef), undefined);
    const response = await fetch(`${orch.url}/.well-known/openid-configuration`);
    t.equal(response.status, 404);
  });

  await t.test('admin route lists keys for the bootstrap token only', async (t) => {
    const token = 'bootstrap-admin-token-0123456789';
    const orch = await boot(db.url, { SVC_SECRET_KEY: masterKey, SVC_BOOTSTRAP_ADMIN_TOKEN: token, SVC_ORCHESTRATOR_PROVENANCE_ISSUER: 'http://127.0.0.1:{port}' });
    t.teardown(() => orch.stop());
    const url = `${orch.url}/api/v1/admin/signing-keys`;
    t.equal((await fetch(url)).status, 401);
    t.equal((await fetch(url, { headers: { authorization: 'Bearer wrong-token-wrong-token' } })).status, 401);
    const ok = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    t.equal(ok.status, 200);
    const body = (await ok.json()) as { keys: Array<Record<string, unknown>> };
    t.ok(body.keys.length >= 3, 'db, kms and command keys are listed');
    t.notOk(JSON.stringify(body).includes('private'), 'metadata only');
  });

  await t.test('master key rotation: self-heal across a restart; a stranger key stops boot naming the store', async (t) => {
    const k2 = randomBytes(32).toString('base64');
    const issuer = { SVC_ORCHESTRATOR_PROVENANCE_ISSUER: 'http://127.0.0.1:{port}' };
    const healing = await boot(db.url, { ...issuer, SVC_SECRET_KEY: k2, SVC_SECRET_KEY_OLD: masterKey });
    const svc = healing.get(identityServiceRef);
    const { jobId, agentId } = await insertRunJob(db.pool);
    const minted = await svc?.mintIdentityToken({ jobId, agentId, audience: 'a' });
    t.ok(minted && 'token' in minted, 'mints after healing');
    await healing.stop();
    const healed = await boot(db.url, { ...issuer, SVC_SECRET_KEY: k2 });
    t.pass('boots with only the new key: the rows were re-sealed');
    await healed.stop();
    await t.rejects(boot(db.url, { ...issuer, SVC_SECRET_KEY: randomBytes(32).toString('base64') }), {
      code: 'SVC_ERR_MASTER_KEY_MISMATCH',
      message: /store signing_keys.*SVC_SECRET_KEY_OLD.*restart.*svc-admin rotate-key/,
    });
  });
});
