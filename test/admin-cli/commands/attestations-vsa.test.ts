// svc-admin attestations vsa in-process (runCli) against a real orchestrator database: the
// provenance signed for an artifact digest is verified against the policy given and the outcome is
// signed as a SLSA Verification Summary Attestation in a Sigstore bundle v0.3, which sigstore-js
// (the orchestrator's Sigstore trusted root and keys) and securesystemslib
// (test/fixtures/dsse-verify.py, a /usr/bin/python3 child) verify; a tampered VSA fails both; a
// policy the provenance does not meet gives FAILED (exit 1); an unknown digest is not found.
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { bundleFromJSON } from '@sigstore/bundle';
import { PublicKey, TrustedRoot } from '@sigstore/protobuf-specs';
import { Verifier, toSignedEntity, toTrustMaterial } from '@sigstore/verify';
import { publicKeySet } from '../../../kernel/orchestrator/identity/key-store.ts';
import { createIdentityService } from '../../../kernel/orchestrator/identity/service.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from '../../kernel/orchestrator/identity/fixtures.ts';

type Json = Record<string, any>;
const run = promisify(execFile);
const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const DSSE_VERIFY = join(REPO_ROOT, 'test/fixtures/dsse-verify.py');
const ISSUER = 'https://ci.example.test';
const artifactBytes = 'the release tarball';
const digest = createHash('sha256').update(artifactBytes).digest('hex');

t.test('attestations vsa', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrateOrchestrator(db.pool);
    const master = randomBytes(32);
    const dir = await mkdtemp(join(tmpdir(), 'svc-admin-vsa-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: master.toString('base64'), SVC_DATA_DIR: dir, SVC_ORCHESTRATOR_PROVENANCE_ISSUER: ISSUER };
    const vsa = (args: string[]) => runCli(BIN, ['attestations', 'vsa', ...args], { env, cwd: dir });
    const custody = boundDbCustody(db.pool, masterKeys(master));
    await custody.generate();
    const service = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'orch-a', logger: silent, keyWaitMs: 300 });
    const { jobId, agentId } = await insertRunJob(db.pool);
    const made = await service.createAttestation({ jobId, agentId, artifact: { name: 'dist/app.tgz', sha256: digest } });
    if ('deferred' in made) throw new Error('deferred');
    const artifact = join(dir, 'app.tgz');
    await writeFile(artifact, artifactBytes);
    const trustRootFile = join(dir, 'trust-root.json');
    await writeFile(trustRootFile, JSON.stringify({ issuer: ISSUER, jwks: await publicKeySet(db.pool) }));

    const sigstoreVerify = async (bundle: Json) => {
      const { keys } = await service.sigstorePublicKeys();
      const publicKeys = Object.fromEntries(Object.entries(keys).map(([hint, key]) => [hint, PublicKey.fromJSON(key)]));
      const verifier = new Verifier(toTrustMaterial(TrustedRoot.fromJSON(service.sigstoreTrustedRoot()), publicKeys), { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 });
      return verifier.verify(toSignedEntity(bundleFromJSON(bundle)));
    };
    const python = async (bundle: Json) => {
      const file = join(dir, `vsa-${Math.random().toString(36).slice(2)}.json`);
      await writeFile(file, JSON.stringify(bundle));
      try {
        return { code: 0, out: JSON.parse((await run('/usr/bin/python3', [DSSE_VERIFY, artifact, file, '--trust-root', trustRootFile])).stdout) as Json };
      } catch (error) {
        const e = error as { code: number; stdout: string };
        return { code: e.code, out: JSON.parse(e.stdout || '{}') as Json };
      }
    };
    const statementOf = (bundle: Json): Json => JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString('utf8'));

    let passed: Json = {};
    await t.test('PASSED: a signed VSA that sigstore-js and securesystemslib verify', async (t) => {
      const out = join(dir, 'app.tgz.vsa.sigstore.json');
      const result = await vsa([`sha256:${digest}`, '--repository', 'acme/widgets', '--workflow', 'ci', '--trust-tier', 'trusted', '--out', out]);
      t.equal(result.code, 0, result.stderr);
      t.match(result.stderr, /^PASSED \(wrote /);
      passed = JSON.parse(await readFile(out, 'utf8')) as Json;
      t.equal(passed.mediaType, 'application/vnd.dev.sigstore.bundle.v0.3+json');
      t.equal(passed.verificationMaterial.publicKey.hint, await custody.keyId());
      t.match(statementOf(passed), {
        _type: 'https://in-toto.io/Statement/v1',
        subject: [{ name: 'dist/app.tgz', digest: { sha256: digest } }],
        predicateType: 'https://slsa.dev/verification_summary/v1',
        predicate: {
          verifier: { id: ISSUER },
          timeVerified: /^\d{4}-\d\d-\d\dT/,
          resourceUri: `${ISSUER}/artifacts/sha256:${digest}`,
          policy: { uri: `${ISSUER}/policies/provenance?repository=acme%2Fwidgets&workflow=ci&trust_tier=trusted`, digest: { sha256: /^[0-9a-f]{64}$/ } },
          inputAttestations: [{ uri: `${ISSUER}/attestations/${made.attestationId}`, digest: { sha256: made.bundle.statementHash } }],
          verificationResult: 'PASSED',
          verifiedLevels: ['SLSA_BUILD_LEVEL_2'],
          slsaVersion: '1.0',
        },
      });
      t.ok((await sigstoreVerify(passed)).key, 'sigstore-js');
      t.match(await python(passed), { code: 0, out: { ok: true, subject: 'dist/app.tgz', predicateType: 'https://slsa.dev/verification_summary/v1' } }, 'securesystemslib');
    });

    await t.test('a tampered VSA fails both', async (t) => {
      const forged = JSON.parse(JSON.stringify(passed)) as Json;
      const statement = statementOf(forged);
      statement.predicate.policy.uri = `${ISSUER}/policies/provenance`;
      forged.dsseEnvelope.payload = Buffer.from(JSON.stringify(statement)).toString('base64');
      await t.rejects(sigstoreVerify(forged), { code: 'SIGNATURE_ERROR' });
      t.match(await python(forged), { code: 1, out: { ok: false } });
    });

    await t.test('FAILED when the provenance does not meet the policy; unknown and bad digests', async (t) => {
      const failed = await vsa([digest, '--repository', 'other/repo', '--trust-tier', 'unknown']);
      t.equal(failed.code, 1);
      t.match(failed.stderr, /^FAILED\n {2}attestation [0-9a-f-]+: repository acme\/widgets is not other\/repo; trust tier trusted is not unknown/);
      const bundle = JSON.parse(failed.stdout) as Json;
      t.match(statementOf(bundle).predicate, { verificationResult: 'FAILED', verifiedLevels: [], inputAttestations: [] });
      t.ok((await sigstoreVerify(bundle)).key, 'a FAILED summary is signed too');
      const unknown = await vsa(['b'.repeat(64)]);
      t.equal(unknown.code, 1);
      t.match(unknown.stderr, /no signed attestation has artifact sha256 b{64}/);
      const bad = await vsa(['nope']);
      t.match(bad.stderr, /nope is not an artifact digest/);
    });
  });
});
