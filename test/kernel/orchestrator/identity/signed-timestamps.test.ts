// Signed timestamps (issue 44 item 3, docs/provenance.md "Signed timestamps"): an in-process
// orchestrator (identity subsystem, real PostgreSQL) configured with a real RFC 3161 TSA
// (`openssl ts -reply` behind node:http, its own root CA and a TSA certificate with critical
// extendedKeyUsage timeStamping) stamps every attestation signature. After `svc-admin
// signing-key revoke --compromised-at T`, with T chosen between two attestations' genTimes (read
// from their tokens, no clock moved), the earlier verifies and the later does not, by
// `svc verify-attestation` offline and online and by `openssl ts -verify` plus the compromise
// time the key-status document publishes; an untimestamped one (TSA down) fails after the
// compromise revoke; a plain revoke fails everything of its key.
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { adminAuthSubsystem } from '../../../../kernel/orchestrator/admin-auth/subsystem.ts';
import { startOrchestrator } from '../../../../kernel/orchestrator/app.ts';
import { identitySubsystem } from '../../../../kernel/orchestrator/identity/subsystem.ts';
import { toSigstoreBundle } from '../../../../kernel/orchestrator/identity/sigstore-bundle.ts';
import { identityServiceRef } from '../../../../kernel/orchestrator/service-refs.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import type { AttestationBundle, TrustRoot, VerifyAttestationResponse } from '../../../../schemas/identity.ts';
import { runCli } from '../../../fixtures/cli.ts';
import { eachDatabase, testLogger } from '../../../fixtures/db.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';
import { opensslTokenText, opensslTsVerify, startTestTsa } from '../../../fixtures/tsa.ts';
import { insertRunJob } from './fixtures.ts';

const SVC = join(REPO_ROOT, 'bin/svc.ts');
const ADMIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const MASTER = 'e'.repeat(64);

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const tokenOf = (bundle: AttestationBundle) => bundle.timestampVerificationData?.rfc3161Timestamps[0]?.signedTimestamp;

t.test('RFC 3161 timestamps and revoke --compromised-at', async (t) => {
  const tsa = await startTestTsa();
  t.teardown(() => tsa.close());
  await eachDatabase(t, async (t, db) => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-signed-time-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const env = {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      SVC_DATABASE_URL: db.url,
      SVC_DATA_DIR: dir,
      SVC_SECRET_KEY: MASTER,
      SVC_SERVER_PORT: String(port),
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_ORCHESTRATOR_PROVENANCE_ISSUER: issuer,
      SVC_ORCHESTRATOR_TIMESTAMP_URL: tsa.url,
      SVC_ORCHESTRATOR_TIMESTAMP_CERT_CHAIN_FILE: tsa.chainFile,
      // A key generated or revoked by svc-admin is seen by the node's next signature.
      SVC_PLUGINS_CONFIG: '{"custody:db":{"activeCacheMs":0}}',
    };
    const orch = await startOrchestrator({ env, cwd: dir, logger: testLogger, plugins: orchestratorPlugins, subsystems: [adminAuthSubsystem, identitySubsystem] });
    t.teardown(() => orch.stop());
    const service = orch.get(identityServiceRef);
    if (!service) throw new Error('identity is off');
    const admin = (args: string[]) => runCli(ADMIN, args, { env, cwd: dir });
    const svc = (args: string[]) => runCli(SVC, args, { env, cwd: dir });

    let n = 0;
    /** One attestation of a fresh artifact file; its bundle written beside it. */
    const attest = async () => {
      n += 1;
      const artifact = join(dir, `app-${n}.tgz`);
      const bytes = Buffer.from(`release ${n}`);
      await writeFile(artifact, bytes);
      const job = await insertRunJob(db.pool);
      const made = await service.createAttestation({ jobId: job.jobId, agentId: job.agentId, artifact: { name: `dist/app-${n}.tgz`, sha256: createHash('sha256').update(bytes).digest('hex') } });
      if ('deferred' in made) throw new Error(`deferred: ${made.code}`);
      const bundlePath = `${artifact}.svc.json`;
      await writeFile(bundlePath, JSON.stringify(made.bundle));
      const token = tokenOf(made.bundle);
      const files = { artifact, bundlePath, sig: `${artifact}.sig`, token: `${artifact}.tsr` };
      await writeFile(files.sig, Buffer.from(made.bundle.dsseEnvelope.signatures[0]!.sig, 'base64'));
      if (token) await writeFile(files.token, Buffer.from(token, 'base64'));
      return { ...files, id: made.attestationId, bundle: made.bundle };
    };
    type Made = Awaited<ReturnType<typeof attest>>;
    const verdict = async (made: Made, how: string[]): Promise<{ code: number; verdict: VerifyAttestationResponse; stderr: string }> => {
      const result = await svc(['verify-attestation', made.artifact, '--bundle', made.bundlePath, ...how, '--json']);
      return { code: result.code ?? -1, verdict: JSON.parse(result.stdout) as VerifyAttestationResponse, stderr: result.stderr };
    };
    const keyStatus = async (): Promise<TrustRoot> => (await fetch(`${issuer}/.well-known/svc-key-status.json`)).json() as Promise<TrustRoot>;
    const saveKeyStatus = async (name: string) => {
      const path = join(dir, name);
      await writeFile(path, JSON.stringify(await keyStatus()));
      return ['--trust-root', path];
    };
    const online = ['--issuer', issuer];
    /** The outside verdict: openssl checks the token over the signature bytes, then its genTime against the published compromise time. */
    const outside = async (made: Made, kid: string) => {
      const openssl = await opensslTsVerify(tsa, made.sig, made.token);
      const text = await opensslTokenText(tsa, made.token);
      const genTime = new Date(/Time stamp: (.+)/.exec(text)![1]!.trim());
      const revoked = (await keyStatus()).revokedKeys?.find((k) => k.kid === kid);
      const keyOk = revoked === undefined || (revoked.compromisedAt !== null && genTime < new Date(revoked.compromisedAt));
      return { opensslOk: openssl.code === 0 && /Verification: OK/.test(openssl.output), genTime, keyOk };
    };

    const k1 = (await service.jwks()).keys[0]!.kid;
    // The TSA serves every database flavour of this file: count this flavour's requests only.
    const requestsBefore = tsa.requests;
    const a1 = await attest();
    const a2 = await attest();
    tsa.down = true;
    const untimestamped = await attest();
    tsa.down = false;

    await t.test('each attestation carries a token the orchestrator and openssl check', async (t) => {
      t.equal(tsa.requests - requestsBefore, 2, 'one TSA request per signature (the third found it down)');
      for (const made of [a1, a2]) {
        t.ok(tokenOf(made.bundle), 'the bundle carries the token');
        // Sigstore's signedTimestamp is a whole TimeStampResp: the token is its last element.
        const stamps = toSigstoreBundle(made.bundle).verificationMaterial.timestampVerificationData?.rfc3161Timestamps ?? [];
        const token = Buffer.from(tokenOf(made.bundle)!, 'base64');
        t.ok(stamps.length === 1 && Buffer.from(stamps[0]!.signedTimestamp, 'base64').subarray(-token.length).equals(token), 'so does its Sigstore bundle form');
        t.notOk(made.bundle.timestampError);
        const check = await outside(made, k1);
        t.ok(check.opensslOk, 'openssl ts -verify: the token is over the DSSE signature and chains to the TSA root');
        const online = await verdict(made, ['--issuer', issuer]);
        t.equal(online.code, 0, online.stderr);
        t.match(online.verdict, { ok: true, kid: k1, signedAt: { genTime: check.genTime.toISOString(), tsa: 'CN=svc test TSA' } }, 'the verdict names the trusted time');
        const text = await svc(['verify-attestation', made.artifact, '--bundle', made.bundlePath, '--issuer', issuer]);
        t.match(text.stdout, `[live], timestamped ${check.genTime.toISOString()} by CN=svc test TSA`, 'and so does the line');
      }
      t.match(untimestamped.bundle.timestampError, /the TSA http:\/\/127\.0\.0\.1:\d+\/tsa answered 503/, 'made without a timestamp, and says why');
      t.equal(tokenOf(untimestamped.bundle), undefined);
      const row = await db.pool.one(sql.unsafe`SELECT timestamped_at IS NOT NULL AS stamped, timestamp_error FROM attestations WHERE id = ${a1.id}::uuid`);
      t.same(row, { stamped: true, timestamp_error: null }, 'the record says when');
      const listed = await admin(['attestations', 'list', '--fulfilled']);
      t.equal(listed.code, 0, listed.stderr);
      t.match(listed.stdout, new RegExp(`${a1.id} .* timestamped \\d{4}-\\d\\d-\\d\\dT`), 'svc-admin attestations list shows it');
      t.match(listed.stdout, new RegExp(`${untimestamped.id} .* untimestamped \\(the TSA .* answered 503\\)`));
      t.match((await verdict(untimestamped, online)).verdict, { ok: true }, 'before any revoke an untimestamped attestation verifies');
      const status = await keyStatus();
      t.same(status.timestampAuthorities, [{ uri: tsa.url, certChain: [tsa.tsaPem, tsa.rootPem] }], 'the key-status document carries the TSA chain');
      t.same(status.revokedKeys, []);
      const jwks = (await (await fetch(`${issuer}/.well-known/jwks.json`)).json()) as { keys: Array<Record<string, unknown>> };
      t.same(Object.keys(jwks.keys[0] ?? {}).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'], 'the JWKS stays a standard JWKS');
    });

    await t.test('a swapped or altered token is refused', async (t) => {
      const swapped = { ...a1.bundle, timestampVerificationData: a2.bundle.timestampVerificationData };
      const path = join(dir, 'swapped.svc.json');
      await writeFile(path, JSON.stringify(swapped));
      const result = await svc(['verify-attestation', a1.artifact, '--bundle', path, ...online, '--json']);
      t.equal(result.code, 1);
      t.match(JSON.parse(result.stdout), { ok: false, reason: 'timestamp_invalid', message: /message imprint differs/ });
      const token = Buffer.from(tokenOf(a1.bundle)!, 'base64');
      token.writeUInt8(token.readUInt8(token.length - 3) ^ 0x01, token.length - 3);
      await writeFile(path, JSON.stringify({ ...a1.bundle, timestampVerificationData: { rfc3161Timestamps: [{ signedTimestamp: token.toString('base64') }] } }));
      const altered = await svc(['verify-attestation', a1.artifact, '--bundle', path, ...online, '--json']);
      t.match(JSON.parse(altered.stdout), { ok: false, reason: 'timestamp_invalid' });
    });

    const g1 = (await outside(a1, k1)).genTime;
    const g2 = (await outside(a2, k1)).genTime;
    t.ok(g1 < g2, `the TSA dated them apart (${g1.toISOString()} < ${g2.toISOString()})`);
    const compromisedAt = new Date(Math.floor((g1.getTime() + g2.getTime()) / 2));

    await t.test('revoke --compromised-at: bad times are refused and change nothing', async (t) => {
      const bad = await admin(['signing-key', 'revoke', '--reason', 'leak', '--compromised-at', 'yesterday', '--', k1]);
      t.equal(bad.code, 2);
      t.match(bad.stderr, /--compromised-at yesterday is not an ISO 8601 time/);
      const future = await admin(['signing-key', 'revoke', '--reason', 'leak', '--compromised-at', new Date(Date.now() + 86_400_000).toISOString(), '--', k1]);
      t.equal(future.code, 1);
      t.match(future.stderr, /SVC_ERR_IDENTITY_COMPROMISED_AT|between the key's creation .* and now/);
      t.same((await keyStatus()).revokedKeys, [], 'still not revoked');
    });

    await t.test('after revoke --compromised-at T: before T verifies, after T and untimestamped do not', async (t) => {
      const revoked = await admin(['signing-key', 'revoke', '--reason', 'host breached', '--compromised-at', compromisedAt.toISOString(), '--', k1]);
      t.equal(revoked.code, 0, revoked.stderr);
      t.match(revoked.stdout, `signatures timestamped before ${compromisedAt.toISOString()} stay verifiable`);
      const status = await keyStatus();
      t.match(status.revokedKeys, [{ kid: k1, compromisedAt: compromisedAt.toISOString(), jwk: { kid: k1 } }], 'the published document carries the compromise time');
      t.notOk(status.jwks.keys.some((k) => k.kid === k1), 'the key left the JWKS');
      const offline = await saveKeyStatus('after-compromise.json');
      for (const how of [offline, online]) {
        const before = await verdict(a1, how);
        t.equal(before.code, 0, `${how[0]}: ${before.stderr}`);
        t.match(before.verdict, { ok: true, kid: k1, signedAt: { genTime: g1.toISOString() } }, `${how[0]}: timestamped before T verifies`);
        const after = await verdict(a2, how);
        t.equal(after.code, 1);
        t.match(after.verdict, { ok: false, reason: 'key_revoked', message: /timestamped at .*, not before/ }, `${how[0]}: timestamped after T is refused`);
        const none = await verdict(untimestamped, how);
        t.equal(none.code, 1);
        t.match(none.verdict, { ok: false, reason: 'key_revoked', message: /has no trusted timestamp/ }, `${how[0]}: untimestamped is refused`);
      }
      const outsideBefore = await outside(a1, k1);
      const outsideAfter = await outside(a2, k1);
      t.same([outsideBefore.opensslOk, outsideBefore.keyOk], [true, true], 'openssl + published compromise time: the earlier holds');
      t.same([outsideAfter.opensslOk, outsideAfter.keyOk], [true, false], 'openssl: the token is genuine, but dated after the compromise');
      // The exported trust root carries the same material.
      const exported = await admin(['signing-key', 'export', '--public', '--out', join(dir, 'exported.json')]);
      t.equal(exported.code, 0, exported.stderr);
      const root = JSON.parse(await readFile(join(dir, 'exported.json'), 'utf8')) as TrustRoot;
      t.match(root, { revokedKeys: [{ kid: k1, compromisedAt: compromisedAt.toISOString() }], timestampAuthorities: [{ uri: tsa.url }] });
      t.equal((await verdict(a1, ['--trust-root', join(dir, 'exported.json')])).code, 0);
      t.equal((await verdict(a2, ['--trust-root', join(dir, 'exported.json')])).code, 1);
    });

    await t.test('a plain revoke keeps all-or-nothing', async (t) => {
      const generated = await admin(['signing-key', 'generate']);
      t.equal(generated.code, 0, generated.stderr);
      const k2 = (await service.jwks()).keys[0]!.kid;
      t.not(k2, k1);
      const b = await attest();
      t.equal(b.bundle.kid, k2);
      t.equal((await verdict(b, online)).code, 0, 'verifies while the key is live');
      const revoked = await admin(['signing-key', 'revoke', '--reason', 'retired in a hurry', '--', k2]);
      t.equal(revoked.code, 0, revoked.stderr);
      t.match((await keyStatus()).revokedKeys, [{ kid: k1 }, { kid: k2, compromisedAt: null }]);
      const offline = await saveKeyStatus('after-plain.json');
      for (const how of [offline, online]) {
        const result = await verdict(b, how);
        t.equal(result.code, 1);
        t.match(result.verdict, { ok: false, reason: 'key_revoked', message: /is revoked; what it signed no longer verifies/ }, `${how[0]}: refused despite its timestamp`);
      }
      const check = await outside(b, k2);
      t.same([check.opensslOk, check.keyOk], [true, false], 'openssl: a genuine token; the published revoke has no compromise time');
    });
  });
});
