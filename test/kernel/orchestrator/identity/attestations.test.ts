import { createHash } from 'node:crypto';
import t from 'tap';
import { createIdentityService } from '../../../../kernel/orchestrator/identity/service.ts';
import { publicKeySet, revokeSigningKey, retireSigningKey } from '../../../../kernel/orchestrator/identity/key-store.ts';
import { verifyAttestationBundle } from '../../../../kernel/orchestrator/identity/verify-attestation.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import type { AttestationBundle } from '../../../../schemas/identity.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { moveStatus } from '../../../fixtures/runs.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from './fixtures.ts';

const ISSUER = 'https://ci.example.test';
const artifactBytes = Buffer.from('the release tarball');
const digest = createHash('sha256').update(artifactBytes).digest('hex');

await eachDatabase(t, async (t, db) => {
  await migrateOrchestrator(db.pool);
  const custody = boundDbCustody(db.pool, masterKeys());
  const service = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'orch-a', logger: silent, keyWaitMs: 300 });
  const trustRoot = async () => ({ issuer: ISSUER, jwks: await publicKeySet(db.pool) });

  await t.test('no key: the statement is frozen, then fulfilled as deferred', async (t) => {
    const { jobId, agentId, runId } = await insertRunJob(db.pool);
    const result = await service.createAttestation({ jobId, agentId, artifact: { name: 'dist/app.tgz', sha256: digest } });
    if (!('deferred' in result)) throw new Error('expected deferral');
    t.equal(result.code, 'unavailable');
    t.match(result.statementHash, /^[0-9a-f]{64}$/);
    t.equal(await service.attestationBundle(result.attestationId), undefined, 'no bundle while pending');
    // The job finishes; the frozen statement is still signed later.
    await moveStatus(db.pool, 'jobs', jobId, 'completed');
    t.same(await service.fulfilDeferredAttestations(), { fulfilled: 0, remaining: 1, deferredCode: 'unavailable' }, 'still no key');
    await custody.generate();
    t.same(await service.fulfilDeferredAttestations(), { fulfilled: 1, remaining: 0 });
    const bundle = await service.attestationBundle(result.attestationId);
    if (!bundle) throw new Error('no bundle');
    t.equal(bundle.attestationOrigin, 'deferred');
    t.equal(bundle.statementHash, result.statementHash, 'the frozen statement is what got signed');
    const verdict = await verifyAttestationBundle({ bundle, artifactSha256: digest, trust: await trustRoot() });
    t.match(verdict, { ok: true, attestationOrigin: 'deferred', claims: { attestation_origin: 'deferred', statement_hash: result.statementHash, svc_run_id: runId } });
  });

  await t.test('offline backfill', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    const statement = 'x';
    void statement;
    const broken = createIdentityService({ pool: db.pool, custody: { keyId: async () => { throw Object.assign(new Error('hsm down'), {}); }, getPublicJwk: async () => ({}), sign: async () => new Uint8Array() }, custodyKind: 'command', issuer: ISSUER, orchestratorId: 'orch-a', logger: silent });
    const deferred = await broken.createAttestation({ jobId, agentId, artifact: { name: 'b.bin', sha256: digest } });
    t.match(deferred, { deferred: true, code: 'signer_failed' });
    if (!('deferred' in deferred)) return;
    t.same(await service.fulfilDeferredAttestations({ origin: 'offline-backfill' }), { fulfilled: 1, remaining: 0 });
    const bundle = await service.attestationBundle(deferred.attestationId);
    t.equal(bundle?.attestationOrigin, 'offline-backfill');
    t.match(await verifyAttestationBundle({ bundle, artifactSha256: digest, trust: await trustRoot() }), { ok: true, claims: { attestation_origin: 'offline-backfill' } });
  });

  let live: AttestationBundle;
  await t.test('live attestation: DSSE over in-toto v1 with SLSA v1, verified offline and online', async (t) => {
    const { jobId, agentId, runId } = await insertRunJob(db.pool);
    const result = await service.createAttestation({ jobId, agentId, artifact: { name: 'dist/app.tgz', sha256: digest } });
    if ('deferred' in result) throw new Error('deferred');
    t.equal(result.fileName, 'app.tgz.svc.json');
    live = result.bundle;
    t.equal(live.dsseEnvelope.payloadType, 'application/vnd.in-toto+json');
    const statement = JSON.parse(Buffer.from(live.dsseEnvelope.payload, 'base64').toString('utf8'));
    t.match(statement, {
      _type: 'https://in-toto.io/Statement/v1',
      subject: [{ name: 'dist/app.tgz', digest: { sha256: digest } }],
      predicateType: 'https://slsa.dev/provenance/v1',
      predicate: {
        buildDefinition: { externalParameters: { repository: 'acme/widgets', sha: 'a'.repeat(40), event_name: 'push', workflow: { name: 'ci' } } },
        runDetails: { builder: { id: ISSUER } },
      },
    });
    t.equal(live.dsseEnvelope.signatures[0]?.keyid, await custody.keyId());
    t.match(await verifyAttestationBundle({ bundle: live, artifactSha256: digest, trust: await trustRoot() }), {
      ok: true,
      attestationOrigin: 'live',
      claims: { svc_run_id: runId, attestation_origin: 'live', statement_hash: null },
    });
    t.match(await service.verifyAttestation({ bundle: live, artifactSha256: digest }), { ok: true });
    await t.rejects(service.createAttestation({ jobId, agentId: 'intruder', artifact: { name: 'a', sha256: digest } }), { code: 'SVC_ERR_IDENTITY_NOT_OWNER' });
    await t.rejects(service.createAttestation({ jobId, agentId, artifact: { name: '', sha256: digest } }), { code: 'SVC_ERR_IDENTITY_ARTIFACT' });
    await t.rejects(service.createAttestation({ jobId, agentId, artifact: { name: 'a', sha256: 'ABC' } }), { code: 'SVC_ERR_IDENTITY_ARTIFACT' });
  });

  await t.test('each kind of tampering is refused with its own reason', async (t) => {
    const root = await trustRoot();
    const check = (bundle: unknown, sha = digest, trust = root) => verifyAttestationBundle({ bundle, artifactSha256: sha, trust });
    const copy = (): AttestationBundle => structuredClone(live);
    const other = createHash('sha256').update('another artifact').digest('hex');
    t.match(await check(live, other), { ok: false, reason: 'artifact_mismatch' }, 'tampered artifact');

    const statement = copy();
    const text = Buffer.from(statement.dsseEnvelope.payload, 'base64').toString('utf8').replace(digest, other);
    statement.dsseEnvelope.payload = Buffer.from(text).toString('base64');
    t.match(await check(statement, other), { ok: false, reason: 'statement_tampered' }, 'tampered statement');
    statement.statementHash = createHash('sha256').update(text).digest('hex');
    t.match(await check(statement, other), { ok: false, reason: 'signature_invalid' }, 'tampered statement with a fixed-up hash');

    const type = copy();
    type.dsseEnvelope.payloadType = 'application/json';
    t.match(await check(type), { ok: false, reason: 'payload_type_mismatch' }, 'tampered payload type');

    const sig = copy();
    const raw = Buffer.from(sig.dsseEnvelope.signatures[0]!.sig, 'base64');
    raw[10] = (raw[10] as number) ^ 1;
    sig.dsseEnvelope.signatures[0]!.sig = raw.toString('base64');
    t.match(await check(sig), { ok: false, reason: 'signature_invalid' }, 'tampered signature');

    const token = copy();
    const other2 = await insertRunJob(db.pool);
    const minted = await service.mintIdentityToken({ jobId: other2.jobId, agentId: other2.agentId, audience: 'svc-attestation' });
    if (!('token' in minted)) throw new Error('deferred');
    token.identityToken = minted.token;
    t.match(await check(token), { ok: false, reason: 'token_mismatch' }, 'a token from another job');
    token.identityToken = live.identityToken.slice(0, -3) + 'AAA';
    t.match(await check(token), { ok: false, reason: 'token_invalid' });

    t.match(await check({ hello: 'world' }), { ok: false, reason: 'bundle_malformed' });
    t.match(await check(live, digest, { ...root, issuer: 'https://elsewhere.test' }), { ok: false, reason: 'issuer_mismatch' });
    t.match(await check(live, digest, { ...root, jwks: { keys: [] } }), { ok: false, reason: 'unknown_key' });
  });

  await t.test('rotate keeps old attestations verifying; revoke makes them fail online', async (t) => {
    const kid = live.kid;
    await custody.rotate();
    t.match(await service.verifyAttestation({ bundle: live, artifactSha256: digest }), { ok: true }, 'retiring');
    await retireSigningKey(db.pool, kid);
    t.match(await service.verifyAttestation({ bundle: live, artifactSha256: digest }), { ok: true }, 'retired');
    const exported = await trustRoot();
    await revokeSigningKey(db.pool, kid, 'compromised');
    t.match(await service.verifyAttestation({ bundle: live, artifactSha256: digest }), { ok: false, reason: 'key_revoked' });
    t.match(await verifyAttestationBundle({ bundle: live, artifactSha256: digest, trust: await trustRoot() }), { ok: false, reason: 'unknown_key' }, 'a trust root exported after the revocation refuses it');
    t.match(await verifyAttestationBundle({ bundle: live, artifactSha256: digest, trust: exported }), { ok: true }, 'an older trust-root snapshot still holds the key (offline limitation)');
  });
});
