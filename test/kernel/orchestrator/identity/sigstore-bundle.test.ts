// ctx.attestProvenance's Sigstore bundle v0.3 (`<artifact>.sigstore.json`), end to end in process:
// the agent's attest code asks a real identity service (real PostgreSQL, db custody) and writes
// both bundles; the orchestrator's public routes (a real HTTP server) publish the Sigstore trusted
// root and keys. Verifiers not written here check it: sigstore-js (@sigstore/verify with the
// published trusted root and keys, log thresholds at zero) and securesystemslib
// (test/fixtures/dsse-verify.py, a /usr/bin/python3 child, with the trust root and with the PEM
// that `svc verify-attestation --print-public-key` prints); so does `svc verify-attestation`,
// offline and online, for both formats. A tampered subject, statement or signature fails each.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { handleRunnerApi, type RunnerApiContext } from '../../../../agent/jobs/runner-api.ts';
import { SecretSet } from '../../../../agent/logs/masker.ts';
import { publicKeySet, revokeSigningKey } from '../../../../kernel/orchestrator/identity/key-store.ts';
import { registerIdentityRoutes } from '../../../../kernel/orchestrator/identity/routes.ts';
import { createIdentityService } from '../../../../kernel/orchestrator/identity/service.ts';
import { publicKeyPem } from '../../../../kernel/orchestrator/identity/sigstore-bundle.ts';
import { createHttpServer, listen } from '../../../../kernel/services/http/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { runCli } from '../../../fixtures/cli.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';
import { publishedTrust, sigstoreVerify as verifyWithSigstoreJs, statementOf, TAMPERS, type Json } from '../../../fixtures/sigstore-verify.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from './fixtures.ts';

const run = promisify(execFile);
const SVC = join(REPO_ROOT, 'bin/svc.ts');
const DSSE_VERIFY = join(REPO_ROOT, 'test/fixtures/dsse-verify.py');
const sha256 = (bytes: string | Buffer) => createHash('sha256').update(bytes).digest('hex');

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

await eachDatabase(t, async (t, db) => {
  await migrateOrchestrator(db.pool);
  const custody = boundDbCustody(db.pool, masterKeys());
  await custody.generate();
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const service = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer, orchestratorId: 'orch-a', logger: silent, keyWaitMs: 300 });
  const app = createHttpServer({ logger: silent });
  await registerIdentityRoutes(app, service);
  await listen(app, { port });
  t.teardown(() => app.close());

  const dir = await mkdtemp(join(tmpdir(), 'svc-sigstore-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const workspace = join(dir, 'ws');
  await mkdir(join(workspace, 'dist'), { recursive: true });
  await mkdir(join(dir, 'scratch'));
  const artifactBytes = 'the release tarball';
  const artifact = join(workspace, 'dist', 'app.tgz');
  await writeFile(artifact, artifactBytes);
  const digest = sha256(artifactBytes);
  const trustRootFile = join(dir, 'trust-root.json');
  await writeFile(trustRootFile, JSON.stringify({ issuer, jwks: await publicKeySet(db.pool) }));
  const kid = await custody.keyId();

  // The agent's real attest path; the dispatch layer's part is the identity service's own handler.
  const { jobId, agentId, runId } = await insertRunJob(db.pool);
  const ctx: RunnerApiContext = {
    jobId,
    workspace,
    scratch: join(dir, 'scratch'),
    secrets: new SecretSet(),
    request: async (message) => {
      const m = message as { type: string; requestId: string };
      if (m.type === 'attestation.create.request') return service.answerAttestationRequest(agentId, message as never);
      // What an orchestrator without artifact storage answers: the bundles stay in the workspace.
      return { type: 'artifact.upload.response', requestId: m.requestId, error: { code: 'SVC_ERR_ARTIFACT_NOT_CONFIGURED', message: 'no storage' } };
    },
    send: () => undefined,
    signal: new AbortController().signal,
  };
  const result = (await handleRunnerApi('attest', { subjects: [{ path: 'dist/app.tgz' }] }, ctx)) as Json;
  const sigstoreFile = join(workspace, 'dist', 'app.tgz.sigstore.json');
  const svcFile = join(workspace, 'dist', 'app.tgz.svc.json');
  const sigstoreBundle = JSON.parse(await readFile(sigstoreFile, 'utf8')) as Json;
  const svcBundle = JSON.parse(await readFile(svcFile, 'utf8')) as Json;

  t.test('the step writes both bundles; the Sigstore one is v0.3 with the orchestrator key as its material', async (t) => {
    t.match(result, { bundlePaths: ['dist/app.tgz.svc.json'], deferred: false, attestations: [{ subject: 'dist/app.tgz', sha256: digest, bundlePath: 'dist/app.tgz.svc.json', sigstoreBundlePath: 'dist/app.tgz.sigstore.json' }] });
    t.equal(sigstoreBundle.mediaType, 'application/vnd.dev.sigstore.bundle.v0.3+json');
    t.same(sigstoreBundle.verificationMaterial, { publicKey: { hint: kid }, tlogEntries: [], timestampVerificationData: { rfc3161Timestamps: [] } });
    t.same(sigstoreBundle.dsseEnvelope, svcBundle.dsseEnvelope, 'one signature, two framings');
    const jwksKids = ((await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as Json).keys.map((k: Json) => k.kid);
    t.ok(jwksKids.includes(sigstoreBundle.verificationMaterial.publicKey.hint), 'the hint is the JWKS kid');
    t.match(statementOf(sigstoreBundle), {
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'dist/app.tgz', digest: { sha256: digest } }],
      predicateType: 'https://slsa.dev/provenance/v1',
      predicate: {
        buildDefinition: {
          buildType: 'https://svc.dev/build/v1',
          externalParameters: { repository: 'acme/widgets', ref: 'refs/heads/main', event_name: 'push', workflow: { name: 'ci', repository: 'acme/widgets' } },
          internalParameters: { svc_run_id: runId, svc_job_id: jobId, trust_tier: 'trusted' },
          resolvedDependencies: [{ name: 'acme/widgets', digest: { gitCommit: 'a'.repeat(40) } }],
        },
        runDetails: { builder: { id: issuer }, metadata: { invocationId: `${issuer}/runs/${runId}/jobs/${jobId}` } },
      },
    });
  });

  const published = () => publishedTrust(issuer);
  /** sigstore-js against what the orchestrator publishes; then the subject, as cosign checks it. */
  const sigstoreVerify = (bundle: Json, artifactSha256 = digest) => verifyWithSigstoreJs(issuer, bundle, artifactSha256);

  t.test('the orchestrator publishes a Sigstore trusted root and its keys', async (t) => {
    const { root, keys } = await published();
    t.same(root, { mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1', tlogs: [], certificateAuthorities: [], ctlogs: [], timestampAuthorities: [] });
    t.match(keys.keys[kid], { rawBytes: /^[A-Za-z0-9+/]+=*$/, keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor: { start: /^\d{4}-/ } });
  });

  t.test('sigstore-js verifies the genuine bundle and refuses each forgery', async (t) => {
    const ok = await sigstoreVerify(sigstoreBundle);
    t.equal(ok.subject.name, 'dist/app.tgz');
    t.ok(ok.signer.key, 'signed by the published key');
    await t.rejects(sigstoreVerify(sigstoreBundle, sha256('another file')), /is not a subject/, 'a different artifact is not the subject');
    for (const [name, tamper] of Object.entries(TAMPERS)) {
      await t.rejects(sigstoreVerify(tamper(sigstoreBundle)), { code: 'SIGNATURE_ERROR' }, name);
    }
  });

  const python = async (bundle: Json, keyArgs: string[]) => {
    const file = join(dir, `bundle-${Math.random().toString(36).slice(2)}.json`);
    await writeFile(file, JSON.stringify(bundle));
    try {
      const { stdout } = await run('/usr/bin/python3', [DSSE_VERIFY, artifact, file, ...keyArgs]);
      return { code: 0, out: JSON.parse(stdout) as Json };
    } catch (error) {
      const e = error as { code: number; stdout: string };
      return { code: e.code, out: JSON.parse(e.stdout || '{}') as Json };
    }
  };

  const cli = (args: string[]) => runCli(SVC, ['verify-attestation', ...args], { env: { PATH: process.env['PATH'], HOME: dir }, cwd: dir });
  let pemFile = '';
  t.test('svc verify-attestation --print-public-key prints the signing key as PEM, offline and online', async (t) => {
    const offline = await cli(['--bundle', sigstoreFile, '--trust-root', trustRootFile, '--print-public-key']);
    t.equal(offline.code, 0, offline.stderr);
    const jwk = (await publicKeySet(db.pool)).keys.find((k) => k.kid === kid);
    if (!jwk) throw new Error('no jwk');
    t.equal(offline.stdout, publicKeyPem(jwk));
    t.match(offline.stdout, /^-----BEGIN PUBLIC KEY-----\n[\s\S]+\n-----END PUBLIC KEY-----\n$/);
    const online = await cli(['--bundle', svcFile, '--issuer', issuer, '--print-public-key']);
    t.equal(online.stdout, offline.stdout, 'the svc bundle names the same key; the issuer JWKS serves it');
    pemFile = join(dir, 'svc-key.pem');
    await writeFile(pemFile, offline.stdout);
    const noArtifact = await cli(['--bundle', sigstoreFile, '--trust-root', trustRootFile]);
    t.equal(noArtifact.code, 2, 'verifying needs the artifact');
  });

  t.test('securesystemslib verifies both formats (trust root, and the printed PEM) and refuses each forgery', async (t) => {
    for (const [label, bundle] of [['sigstore', sigstoreBundle], ['svc', svcBundle]] as const) {
      t.match(await python(bundle, ['--trust-root', trustRootFile]), { code: 0, out: { ok: true, keyid: kid, subject: 'dist/app.tgz' } }, `${label}: genuine`);
      t.match(await python(bundle, ['--public-key', pemFile]), { code: 0, out: { ok: true } }, `${label}: genuine, key from --print-public-key`);
      for (const [name, tamper] of Object.entries(TAMPERS)) {
        t.match(await python(tamper(bundle), ['--trust-root', trustRootFile]), { code: 1, out: { ok: false, error: /no envelope signature verifies/ } }, `${label}: ${name}`);
      }
    }
  });

  t.test('svc verify-attestation accepts both formats, offline and online, and refuses each forgery', async (t) => {
    const sig = await cli([artifact, '--bundle', sigstoreFile, '--trust-root', trustRootFile]);
    t.equal(sig.code, 0, sig.stderr);
    t.match(sig.stdout, `verified: dist/app.tgz (sha256 ${digest}) signed by ${issuer} key ${kid} [sigstore-v0.3]`);
    const svc = await cli([artifact, '--bundle', svcFile, '--trust-root', trustRootFile]);
    t.match(svc.stdout, '[live]');
    const online = await cli([artifact, '--bundle', sigstoreFile, '--issuer', issuer, '--json']);
    t.equal(online.code, 0, online.stderr);
    t.match(JSON.parse(online.stdout), { ok: true, format: 'sigstore-v0.3', kid, claims: { svc_run_id: runId, svc_job_id: jobId } });
    const other = join(dir, 'other.tgz');
    await writeFile(other, 'another file');
    t.match((await cli([other, '--bundle', sigstoreFile, '--trust-root', trustRootFile])).stderr, /not verified \(artifact_mismatch\)/);
    const expected: Record<string, RegExp> = {
      'tampered subject': /not verified \(signature_invalid\)/,
      'tampered statement': /not verified \(signature_invalid\)/,
      'tampered signature': /not verified \(signature_invalid\)/,
    };
    const expectedSvc: Record<string, RegExp> = {
      'tampered subject': /not verified \(statement_tampered\)/,
      'tampered statement': /not verified \(statement_tampered\)/,
      'tampered signature': /not verified \(signature_invalid\)/,
    };
    for (const [name, tamper] of Object.entries(TAMPERS)) {
      const file = join(dir, 'forged.sigstore.json');
      await writeFile(file, JSON.stringify(tamper(sigstoreBundle)));
      const offline = await cli([artifact, '--bundle', file, '--trust-root', trustRootFile]);
      t.equal(offline.code, 1, `sigstore ${name}: exit 1`);
      t.match(offline.stderr, expected[name] as RegExp, `sigstore ${name}, offline`);
      t.match((await cli([artifact, '--bundle', file, '--issuer', issuer])).stderr, expected[name] as RegExp, `sigstore ${name}, online`);
      const svcForged = join(dir, 'forged.svc.json');
      await writeFile(svcForged, JSON.stringify(tamper(svcBundle)));
      t.match((await cli([artifact, '--bundle', svcForged, '--trust-root', trustRootFile])).stderr, expectedSvc[name] as RegExp, `svc ${name}, offline`);
    }
    const malformed = join(dir, 'malformed.sigstore.json');
    await writeFile(malformed, JSON.stringify({ ...sigstoreBundle, verificationMaterial: { tlogEntries: [] } }));
    t.match((await cli([artifact, '--bundle', malformed, '--trust-root', trustRootFile])).stderr, /not verified \(bundle_malformed\): not a Sigstore bundle v0\.3 with a public key/);
  });

  t.test('a revoked key: left out of the published keys, refused online and by sigstore-js', async (t) => {
    await revokeSigningKey(db.pool, kid, 'test: compromised');
    t.same((await published()).keys, { keys: {} });
    await t.rejects(sigstoreVerify(sigstoreBundle), { code: 'PUBLIC_KEY_ERROR' });
    t.match((await cli([artifact, '--bundle', sigstoreFile, '--issuer', issuer])).stderr, /not verified \(key_revoked\)/);
  });
});
