// The provenance statement and the agent-facing answer (real PostgreSQL, db custody): the SLSA v1
// predicate carries the run's identity claims (never per-token ones), the job, the step's own
// parameters and the invocation; envelope signatures are DER and verify with node's own ECDSA;
// bad step parameters are refused with nothing stored; a deferral answers with the frozen
// statement's hash, and a later signer records the node that ran the job as orchestrator_id.
import { createHash, generateKeyPairSync, sign as nodeSign, verify as nodeVerify } from 'node:crypto';
import t from 'tap';
import { decodeJwt } from 'jose';
import { STEP_PARAMETERS_MAX_BYTES } from '../../../../kernel/orchestrator/identity/attestations.ts';
import { preAuthEncoding, rawToDerSignature } from '../../../../kernel/orchestrator/identity/dsse.ts';
import { publicKeySet } from '../../../../kernel/orchestrator/identity/key-store.ts';
import { createIdentityService } from '../../../../kernel/orchestrator/identity/service.ts';
import { verifyAttestationBundle } from '../../../../kernel/orchestrator/identity/verify-attestation.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import type { AttestationBundle } from '../../../../schemas/identity.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from './fixtures.ts';


const ISSUER = 'https://ci.example.test';
const digest = createHash('sha256').update('release bytes').digest('hex');
const statementOf = (bundle: AttestationBundle) => JSON.parse(Buffer.from(bundle.dsseEnvelope.payload, 'base64').toString('utf8')) as Record<string, any>;

t.test('rawToDerSignature: DER that node verifies, for r and s with and without the high bit', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let highBit = 0;
  let verified = 0;
  for (let i = 0; i < 64; i += 1) {
    const data = Buffer.from(`message ${i}`);
    const raw = nodeSign('sha256', data, { key: privateKey, dsaEncoding: 'ieee-p1363' });
    if ((raw[0]! & 0x80) !== 0 || (raw[32]! & 0x80) !== 0) highBit += 1;
    const der = rawToDerSignature(raw);
    if (der[0] === 0x30 && der[1] === der.length - 2 && nodeVerify('sha256', data, { key: publicKey, dsaEncoding: 'der' }, der)) verified += 1;
  }
  t.equal(verified, 64, 'every DER signature is a well-formed SEQUENCE that node verifies');
  t.ok(highBit > 0, `some signatures had a high bit set (${highBit} of 64)`);
  t.throws(() => rawToDerSignature(new Uint8Array(63)), /64 bytes, not 63/);
});

await eachDatabase(t, async (t, db) => {
  await migrateOrchestrator(db.pool);
  const custody = boundDbCustody(db.pool, masterKeys());
  await custody.generate();
  const service = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'orch-a', logger: silent, keyWaitMs: 300 });
  const trust = async () => ({ issuer: ISSUER, jwks: await publicKeySet(db.pool) });
  const count = async () => Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int AS n FROM attestations`));

  await t.test('the answer to attestation.create.request: a DER-signed bundle over an SLSA v1 statement of this job', async (t) => {
    const { jobId, agentId, runId } = await insertRunJob(db.pool);
    await db.pool.query(sql.unsafe`UPDATE jobs SET started_at = '2026-01-02T03:04:05.678Z' WHERE id = ${jobId}`);
    const answer = await service.answerAttestationRequest(agentId, {
      type: 'attestation.create.request',
      jobId,
      requestId: 'r1',
      artifact: { name: 'dist/app.tgz', sha256: digest },
      parameters: { target: 'linux-x64', flags: ['--release'] },
    });
    t.match(answer, { type: 'attestation.create.response', requestId: 'r1', fileName: 'app.tgz.svc.json', attestationId: /^[0-9a-f-]{36}$/, statementHash: /^[0-9a-f]{64}$/ });
    const bundle = answer.bundle;
    if (bundle === undefined) throw new Error(`no bundle: ${JSON.stringify(answer)}`);
    t.equal(answer.statementHash, bundle.statementHash);
    const statement = statementOf(bundle);
    t.same(statement['predicate'].buildDefinition.externalParameters, {
      repository: 'acme/widgets',
      ref: 'refs/heads/main',
      sha: 'a'.repeat(40),
      event_name: 'push',
      workflow: { name: 'ci', repository: 'acme/widgets', ref: `ci@${'a'.repeat(40)}` },
      job: 'build',
      stepParameters: { target: 'linux-x64', flags: ['--release'] },
    });
    t.same(statement['predicate'].buildDefinition.internalParameters, {
      iss: ISSUER,
      sub: 'repo:acme/widgets:ref:refs/heads/main:workflow:ci',
      repository: 'acme/widgets',
      ref: 'refs/heads/main',
      base_ref: 'refs/heads/main',
      head_ref: '',
      head_repository: '',
      is_fork: 'false',
      event_name: 'push',
      trust_tier: 'trusted',
      actor: 'alice',
      sha: 'a'.repeat(40),
      workflow_ref: `ci@${'a'.repeat(40)}`,
      svc_run_id: runId,
      svc_job_id: jobId,
      org_id: 'org-1',
      orchestrator_id: 'orch-a',
      provider: 'github',
      source_origin: 'triggered',
      workflow_repository: 'acme/widgets',
    }, 'every run identity claim, no per-token claim');
    t.same(statement['predicate'].buildDefinition.resolvedDependencies, [{ uri: 'git+github:acme/widgets@refs/heads/main', name: 'acme/widgets', digest: { gitCommit: 'a'.repeat(40) } }]);
    t.same(statement['predicate'].runDetails, { builder: { id: ISSUER }, metadata: { invocationId: `${ISSUER}/runs/${runId}/jobs/${jobId}`, startedOn: '2026-01-02T03:04:05.678Z' } });

    const sig = Buffer.from(bundle.dsseEnvelope.signatures[0]!.sig, 'base64');
    t.equal(sig[0], 0x30, 'DER');
    const jwk = (await publicKeySet(db.pool)).keys.find((k) => k.kid === bundle.kid);
    const pae = preAuthEncoding(bundle.dsseEnvelope.payloadType, Buffer.from(bundle.dsseEnvelope.payload, 'base64'));
    t.ok(nodeVerify('sha256', pae, { key: jwk as never, format: 'jwk', dsaEncoding: 'der' }, sig), 'the DER signature covers the PAE');
    t.match(await verifyAttestationBundle({ bundle, artifactSha256: digest, trust: await trust() }), { ok: true, attestationOrigin: 'live' });

    // A bundle carrying the raw r‖s form (as bundles made before DER) still verifies.
    const raw = Buffer.from(await custody.sign(pae, bundle.kid));
    const legacy = structuredClone(bundle);
    legacy.dsseEnvelope.signatures[0]!.sig = raw.toString('base64');
    t.match(await verifyAttestationBundle({ bundle: legacy, artifactSha256: digest, trust: await trust() }), { ok: true });
  });

  await t.test('bad step parameters and strangers are refused; nothing is stored', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    const before = await count();
    const ask = (extra: Record<string, unknown>, agent = agentId) =>
      service.answerAttestationRequest(agent, { type: 'attestation.create.request', jobId, requestId: 'r2', artifact: { name: 'a.bin', sha256: digest }, ...extra } as never);
    const big = await ask({ parameters: { blob: 'x'.repeat(STEP_PARAMETERS_MAX_BYTES) } });
    t.match(big, { error: { code: 'SVC_ERR_IDENTITY_PREDICATE', message: /at most 65536 are recorded/ } });
    t.match(await ask({ parameters: ['not', 'an', 'object'] }), { error: { code: 'SVC_ERR_IDENTITY_PREDICATE', message: /must be a JSON object/ } });
    t.match(await ask({}, 'intruder'), { error: { code: 'SVC_ERR_IDENTITY_NOT_OWNER' } });
    t.match(await ask({ artifact: { name: 'a.bin', sha256: 'nope' } }), { error: { code: 'SVC_ERR_IDENTITY_ARTIFACT' } });
    t.equal(await count(), before, 'no attestation row was written');
  });

  await t.test('deferred: the answer names the frozen statement; a later signer keeps the job node as orchestrator_id', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    const unavailable = createIdentityService({
      pool: db.pool,
      custody: { keyId: async () => { throw new Error('hsm down'); }, getPublicJwk: async () => ({}), sign: async () => new Uint8Array() } as never,
      custodyKind: 'command',
      issuer: ISSUER,
      orchestratorId: 'orch-a',
      logger: silent,
    });
    const answer = await unavailable.answerAttestationRequest(agentId, { type: 'attestation.create.request', jobId, requestId: 'r3', artifact: { name: 'b.bin', sha256: digest } });
    t.match(answer, { type: 'attestation.create.response', requestId: 'r3', deferred: true, code: 'signer_failed', statementHash: /^[0-9a-f]{64}$/ });
    t.notOk('bundle' in answer, 'no bundle while deferred');
    // Signed by another signer (an operator's svc-admin, another node).
    const elsewhere = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'svc-admin', logger: silent });
    t.match(await elsewhere.fulfilDeferredAttestations({ origin: 'offline-backfill' }), { fulfilled: 1, remaining: 0 });
    const bundle = await service.attestationBundle(answer.attestationId!);
    if (bundle === undefined) throw new Error('no bundle after the backfill');
    t.equal(bundle.statementHash, answer.statementHash);
    const claims = decodeJwt(bundle.identityToken);
    t.match(claims, { orchestrator_id: 'orch-a', attestation_origin: 'offline-backfill', statement_hash: answer.statementHash });
    t.match(await verifyAttestationBundle({ bundle, artifactSha256: digest, trust: await trust() }), { ok: true, attestationOrigin: 'offline-backfill' });
  });
});
