// The operator and developer CLIs as real processes: svc-admin signing-key lifecycle, export of
// the trust root, rotate-key's count line, and svc verify-attestation offline and online.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import t from 'tap';
import { startOrchestrator } from '../../kernel/orchestrator/app.ts';
import { identityServiceRef } from '../../kernel/orchestrator/service-refs.ts';
import { ORCHESTRATOR_SUBSYSTEMS } from '../../kernel/orchestrator/subsystems.ts';
import { orchestratorPlugins } from '../../plugins/builtin.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { programPath } from '../fixtures/programs.ts';
import { insertRunJob, silent } from '../kernel/orchestrator/identity/fixtures.ts';

t.setTimeout(1_200_000);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const dir = await mkdtemp(join(tmpdir(), 'svc-identity-cli-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function cli(bin: 'svc' | 'svc-admin', args: string[], env: Record<string, string>) {
  // The compiled bin under the suite (SVC_TEST_DIST=1), the source otherwise.
  return execa(process.execPath, [programPath(join(ROOT, `bin/${bin}.ts`)), ...args], {
    cwd: dir,
    env: { PATH: process.env['PATH'] ?? '', HOME: dir, SVC_DATA_DIR: dir, ...env },
    extendEnv: false,
    reject: false,
    timeout: 60_000,
  });
}

await eachDatabase(t, async (t, db) => {
  const k1 = randomBytes(32).toString('base64');
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const base = { SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: k1, SVC_ORCHESTRATOR_PROVENANCE_ISSUER: issuer };
  const admin = (args: string[], env: Record<string, string> = base) => cli('svc-admin', args, env);

  const first = await admin(['signing-key', 'generate']);
  t.equal(first.exitCode, 0, first.stderr);
  const kid1 = first.stdout.trim();
  t.match(kid1, /^[A-Za-z0-9_-]{43}$/);
  const again = await admin(['signing-key', 'generate']);
  t.equal(again.stdout.trim(), kid1, 'generate prints the existing active kid');
  const rotated = await admin(['signing-key', 'rotate', '--json']);
  const kid2 = (JSON.parse(rotated.stdout) as { kid: string }).kid;
  t.not(kid2, kid1);
  const list = await admin(['signing-key', 'list']);
  t.match(list.stdout, new RegExp(`${kid1}\\s+retiring\\s+\\d{4}-`));
  t.match(list.stdout, new RegExp(`${kid2}\\s+active`));

  const badRetire = await admin(['signing-key', 'retire', '--', kid2]);
  t.equal(badRetire.exitCode, 1);
  t.match(badRetire.stderr, /SVC_ERR_IDENTITY_KEY_STATE: signing key .* is active; only a retiring key can be retired/);
  const noReason = await admin(['signing-key', 'revoke', '--', kid1]);
  t.equal(noReason.exitCode, 2, 'missing --reason is a usage error');
  t.equal((await admin(['signing-key', 'retire', '--', kid1])).exitCode, 0);
  const noDb = await admin(['signing-key', 'generate'], { SVC_SECRET_KEY: k1 });
  t.equal(noDb.exitCode, 2);
  t.match(noDb.stderr, /--database-url or set SVC_DATABASE_URL/);

  // rotate-key: every row (the retired one too) under the new master key.
  const k2 = randomBytes(32).toString('base64');
  const rotateKey = await admin(['rotate-key'], { ...base, SVC_SECRET_KEY: k2, SVC_SECRET_KEY_OLD: k1 });
  t.equal(rotateKey.exitCode, 0, rotateKey.stderr);
  t.equal(rotateKey.stdout.trim().split('\n')[0], 'Re-encrypted 2 provenance signing keys.');
  t.match(rotateKey.stdout, /^Re-encrypted 0 secrets\.$/m, 'the secret contexts sweep line');
  const wrong = await admin(['rotate-key'], { ...base, SVC_SECRET_KEY: randomBytes(32).toString('base64') });
  t.equal(wrong.exitCode, 1);
  t.match(wrong.stderr, /store signing_keys/);

  const orch = await startOrchestrator({
    env: { ...base, SVC_SECRET_KEY: k2, SVC_SERVER_HOST: '127.0.0.1', SVC_SERVER_PORT: String(port), SVC_DATA_DIR: dir, SVC_BOOTSTRAP_ADMIN_TOKEN: 'admin-token-0123456789abcdef' },
    cwd: dir,
    plugins: orchestratorPlugins,
    subsystems: ORCHESTRATOR_SUBSYSTEMS,
    logger: silent,
  });
  t.teardown(() => orch.stop());
  const service = orch.get(identityServiceRef);
  if (!service) throw new Error('no identity service');

  const viaApi = await admin(['signing-key', 'list', '--json', '--url', issuer, '--token', 'admin-token-0123456789abcdef'], { SVC_SECRET_KEY: k2 });
  t.equal(viaApi.exitCode, 0, viaApi.stderr);
  t.equal((JSON.parse(viaApi.stdout) as { keys: unknown[] }).keys.length, 2, 'list through the admin API without a database');
  const badToken = await admin(['signing-key', 'list', '--url', issuer, '--token', 'nope-nope-nope-nope'], { SVC_SECRET_KEY: k2 });
  t.equal(badToken.exitCode, 1);

  const artifact = join(dir, 'app.tgz');
  await writeFile(artifact, 'release bytes');
  const sha256 = createHash('sha256').update('release bytes').digest('hex');
  const { jobId, agentId } = await insertRunJob(db.pool);
  const created = await service.createAttestation({ jobId, agentId, artifact: { name: 'app.tgz', sha256 } });
  if ('deferred' in created) throw new Error('deferred');
  const bundleFile = join(dir, created.fileName);
  await writeFile(bundleFile, JSON.stringify(created.bundle));

  const trustRoot = join(dir, 'trust-root.json');
  const exported = await admin(['signing-key', 'export', '--public', '--out', trustRoot]);
  t.equal(exported.exitCode, 0, exported.stderr);
  const root = JSON.parse(await readFile(trustRoot, 'utf8')) as { issuer: string; jwks: { keys: Array<Record<string, unknown>> } };
  t.equal(root.issuer, issuer);
  t.same(Object.keys(root).sort(), ['issuer', 'jwks']);
  t.notOk(JSON.stringify(root).includes('"d"'), 'no private material');

  const svc = (args: string[]) => cli('svc', args, { SVC_ORCHESTRATOR_PROVENANCE_ISSUER: issuer });
  const offline = await svc(['verify-attestation', artifact, '--bundle', bundleFile, '--trust-root', trustRoot]);
  t.equal(offline.exitCode, 0, offline.stderr);
  t.match(offline.stdout, /^verified: app.tgz/);
  const online = await svc(['verify-attestation', artifact, '--bundle', bundleFile]);
  t.equal(online.exitCode, 0, online.stderr);
  t.match(online.stdout, /^verified/);

  const tampered = join(dir, 'tampered.tgz');
  await writeFile(tampered, 'release bytes!');
  const refused = await svc(['verify-attestation', tampered, '--bundle', bundleFile, '--trust-root', trustRoot]);
  t.equal(refused.exitCode, 1);
  t.match(refused.stderr, /not verified \(artifact_mismatch\)/);

  const revoke = await admin(['signing-key', 'revoke', '--reason', 'key leaked', '--', kid2]);
  t.equal(revoke.exitCode, 0, revoke.stderr);
  const onlineRevoked = await svc(['verify-attestation', artifact, '--bundle', bundleFile, '--json']);
  t.equal(onlineRevoked.exitCode, 1);
  t.match(JSON.parse(onlineRevoked.stdout), { ok: false, reason: 'key_revoked' });
  const badRoot = join(dir, 'bad-root.json');
  await writeFile(badRoot, '{"issuer": 1}');
  const badRootRun = await svc(['verify-attestation', artifact, '--bundle', bundleFile, '--trust-root', badRoot]);
  t.equal(badRootRun.exitCode, 1);
  t.match(badRootRun.stderr, /is not \{ issuer, jwks \}/);
});
