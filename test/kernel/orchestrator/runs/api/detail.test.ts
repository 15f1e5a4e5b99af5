// The run page's extras as the orchestrator answers them (`run.detail.request`,
// `run.attestation.request`), on real PostgreSQL with a real db-custody signing key: job outputs as
// stored, the whole re-run lineage from any run of it (both ways, a fork in the tree, the cap), and
// each attestation's verdict by the verifier `svc verify-attestation` uses — verified, tampered,
// pending, revoked key, no issuer — plus the bundle download. Other orgs see nothing.
import { createHash, randomUUID } from 'node:crypto';
import t from 'tap';
import { answerDashboardRequest, loadRunView, type RunsApiDeps } from '../../../../../kernel/orchestrator/runs/api/index.ts';
import { createIdentityService } from '../../../../../kernel/orchestrator/identity/service.ts';
import { publicKeySet, revokeSigningKey } from '../../../../../kernel/orchestrator/identity/key-store.ts';
import { verifyAttestationBundle } from '../../../../../kernel/orchestrator/identity/verify-attestation.ts';
import { MAX_LINEAGE_RUNS, type RunDetail } from '../../../../../schemas/wire/relay.ts';
import { sql } from '../../../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../../../fixtures/db.ts';
import { insertRun } from '../../../../fixtures/runs.ts';
import { boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator } from '../../identity/fixtures.ts';

const ISSUER = 'https://ci.example.test';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

await eachDatabase(t, async (t, db) => {
  await migrateOrchestrator(db.pool);
  const custody = boundDbCustody(db.pool, masterKeys());
  const identity = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'orch-a', logger: testLogger, keyWaitMs: 300 });
  const deps: RunsApiDeps = {
    pool: db.pool,
    logger: testLogger,
    storage: () => undefined,
    rerun: { sourceById: async () => null, providerFor: () => undefined, checkCaches: async () => ({ sourceHit: null, depsHit: null, buildKey: null }), notifyJobsQueued: async () => undefined },
    cancel: async () => ({ cancelledJobs: 0 }),
    attestationTrust: () => identity.trust(),
  };
  const detailOf = async (orgId: string, runId: string, with_: RunsApiDeps = deps): Promise<RunDetail> => {
    const answer = await answerDashboardRequest(with_, { type: 'run.detail.request', requestId: randomUUID(), orgId, runId });
    if (answer.type !== 'run.detail.response' || answer.detail === undefined) throw new Error(`no detail: ${JSON.stringify(answer)}`);
    return answer.detail;
  };

  await t.test('job outputs as stored, in job order; jobs without outputs are left out', async (t) => {
    const run = await insertRun(db.pool, { orgId: 'acme', jobs: [{ name: 'build' }, { name: 'test' }, { name: 'lint' }] });
    const [build, test] = [run.jobs['build']!.id, run.jobs['test']!.id];
    // What the agent stored: a released secret and a secret output already masked.
    await db.pool.query(sql.unsafe`update jobs set outputs = ${sql.jsonb({ version: '1.2.3', token: '***', meta: { n: 2 } })} where id = ${build}`);
    await db.pool.query(sql.unsafe`update jobs set outputs = ${sql.jsonb({})} where id = ${test}`);
    const detail = await detailOf('acme', run.runId);
    const stored: Record<string, unknown> = { build: { version: '1.2.3', token: '***', meta: { n: 2 } }, test: {} };
    // The order `runs show` lists jobs in; lint stored none.
    const order = (await loadRunView(db.pool, 'acme', run.runId)).jobs.map((j) => j.name).filter((n) => n !== 'lint');
    t.same(detail.outputs.map((o) => [o.job, o.outputs]), order.map((n) => [n, stored[n]]));
    t.same(detail.outputs.map((o) => o.jobId).sort(), [build, test].sort());
    t.same(detail.lineage.map((l) => l.runId), [run.runId], 'a run never re-run is its own lineage');
    t.same(detail.attestations, []);
    const other = await answerDashboardRequest(deps, { type: 'run.detail.request', requestId: randomUUID(), orgId: 'umbrella', runId: run.runId });
    t.match(other, { error: { status: 404, code: 'SVC_ERR_RUNS_NOT_FOUND' } }, 'another org reads nothing');
    t.notOk('detail' in other);
  });

  await t.test('the whole lineage, oldest first, from any run of it', async (t) => {
    // a ← b ← c (a chain), and d re-ran a again: a tree with a fork.
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await insertRun(db.pool, { orgId: 'acme', status: 'completed', jobs: [{ name: 'only', status: 'completed' }] })).runId);
    const [a, b, c, d] = ids as [string, string, string, string];
    const link = (id: string, parent: string, minutes: number, by: string) =>
      db.pool.query(sql.unsafe`update runs set parent_run_id = ${parent}, original_run_id = ${a}, triggered_by = ${by}, created_at = now() + make_interval(mins => ${minutes}) where id = ${id}`);
    await db.pool.query(sql.unsafe`update runs set created_at = now() where id = ${a}`);
    await link(b, a, 1, 'alice');
    await link(c, b, 2, 'bob');
    await link(d, a, 3, 'carol');
    const expected = [
      { runId: a, parentRunId: null, triggeredBy: null },
      { runId: b, parentRunId: a, triggeredBy: 'alice' },
      { runId: c, parentRunId: b, triggeredBy: 'bob' },
      { runId: d, parentRunId: a, triggeredBy: 'carol' },
    ];
    for (const from of ids) {
      const detail = await detailOf('acme', from);
      t.match(detail.lineage, expected, `seen from ${from === a ? 'the original' : from === c ? 'the newest of the chain' : 'a re-run'}`);
      t.equal(detail.lineage.length, 4);
      t.equal(detail.lineageTruncated, false);
      t.ok(detail.lineage.every((l) => l.status === 'completed' && !Number.isNaN(Date.parse(l.createdAt))));
    }
    // A run of another org never joins the lineage, even when it names the same original.
    const stray = await insertRun(db.pool, { orgId: 'umbrella', jobs: [{ name: 'x' }] });
    await db.pool.query(sql.unsafe`update runs set original_run_id = ${a}, parent_run_id = ${a} where id = ${stray.runId}`);
    t.notOk((await detailOf('acme', a)).lineage.some((l) => l.runId === stray.runId), "another org's run is not listed");
  });

  await t.test('a lineage longer than the cap is cut and says so', async (t) => {
    const root = (await insertRun(db.pool, { orgId: 'acme', jobs: [{ name: 'only' }] })).runId;
    await db.pool.query(sql.unsafe`
      insert into runs (id, org_id, provider, repository, workflow_repository, workflow, workflow_sha, workflow_ref, sha, ref, event_name, subject_kind,
                        trust_tier, status, content_hash, lock_entry, event, parent_run_id, original_run_id, created_at)
      select gen_random_uuid(), org_id, provider, repository, workflow_repository, workflow, workflow_sha, workflow_ref, sha, ref, event_name, subject_kind,
             trust_tier, 'queued', content_hash, lock_entry, event, id, id, now() + make_interval(secs => g)
      from runs, generate_series(1, ${MAX_LINEAGE_RUNS}) g where id = ${root}`);
    const detail = await detailOf('acme', root);
    t.equal(detail.lineage.length, MAX_LINEAGE_RUNS);
    t.equal(detail.lineageTruncated, true);
    t.equal(detail.lineage[0]!.runId, root, 'the original comes first');
  });

  await t.test('attestations: each verdict from the verifier, against this orchestrator\'s keys', async (t) => {
    await custody.generate();
    const { runId, jobId, agentId } = await insertRunJob(db.pool, { org_id: 'acme' });
    const attest = async (name: string) => {
      const made = await identity.createAttestation({ jobId, agentId, artifact: { name, sha256: sha(name) } });
      if ('deferred' in made) throw new Error('deferred');
      return made;
    };
    const good = await attest('dist/app.tgz');
    const tampered = await attest('dist/other.tgz');
    // Someone edits the stored statement (the subject's digest): the hash no longer matches.
    const forged = JSON.parse(Buffer.from(tampered.bundle.dsseEnvelope.payload, 'base64').toString('utf8'));
    forged.subject[0].digest.sha256 = 'f'.repeat(64);
    const forgedBundle = { ...tampered.bundle, dsseEnvelope: { ...tampered.bundle.dsseEnvelope, payload: Buffer.from(JSON.stringify(forged)).toString('base64') } };
    await db.pool.query(sql.unsafe`update attestations set bundle = ${sql.jsonb(forgedBundle as never)} where id = ${tampered.attestationId}`);
    // A signature deferred while no key answered: pending, no bundle.
    const broken = createIdentityService({ pool: db.pool, custody: { keyId: async () => { throw new Error('hsm down'); }, getPublicJwk: async () => ({}), sign: async () => new Uint8Array() }, custodyKind: 'command', issuer: ISSUER, orchestratorId: 'orch-a', logger: testLogger });
    const pending = await broken.createAttestation({ jobId, agentId, artifact: { name: 'dist/late.bin', sha256: sha('late') } });
    if (!('deferred' in pending)) throw new Error('expected a deferral');

    const detail = await detailOf('acme', runId);
    const by = (subject: string) => detail.attestations.find((a) => a.subject === subject)!;
    t.same(detail.attestations.map((a) => a.subject), ['dist/app.tgz', 'dist/late.bin', 'dist/other.tgz'], 'listed per artifact, by subject');
    t.match(by('dist/app.tgz'), {
      attestationId: good.attestationId,
      jobId,
      job: 'build',
      sha256: sha('dist/app.tgz'),
      bundleName: 'app.tgz.svc.json',
      status: 'fulfilled',
      origin: 'live',
      kid: good.bundle.kid,
      verification: { badge: 'verified', reason: null, message: new RegExp(`signed by ${ISSUER} key ${good.bundle.kid} \\[live\\]`) },
    });
    t.match(by('dist/other.tgz').verification, { badge: 'not_verifiable', reason: 'statement_tampered' });
    t.match(by('dist/late.bin'), { status: 'pending', origin: null, kid: null, verification: { badge: 'not_verifiable', reason: 'pending', message: /deferred \(signer_failed\)/ } });

    const noIssuer = await detailOf('acme', runId, { ...deps, attestationTrust: undefined } as RunsApiDeps);
    t.match(noIssuer.attestations.find((a) => a.subject === 'dist/app.tgz')!.verification, { badge: 'not_verifiable', reason: 'issuer_off' }, 'no issuer: nothing to verify against');

    // The bundle as the download link gives it: verifies offline against the exported keys.
    const download = await answerDashboardRequest(deps, { type: 'run.attestation.request', requestId: randomUUID(), orgId: 'acme', runId, attestationId: good.attestationId });
    if (download.type !== 'run.attestation.response' || download.attestation === undefined) throw new Error(JSON.stringify(download));
    t.equal(download.attestation.fileName, 'app.tgz.svc.json');
    t.same(download.attestation.bundle, good.bundle, 'the stored bundle, unchanged');
    t.match(await verifyAttestationBundle({ bundle: download.attestation.bundle, artifactSha256: sha('dist/app.tgz'), trust: { issuer: ISSUER, jwks: await publicKeySet(db.pool) } }), { ok: true });
    const ask = (orgId: string, run: string, attestationId: string) => answerDashboardRequest(deps, { type: 'run.attestation.request', requestId: randomUUID(), orgId, runId: run, attestationId });
    t.match(await ask('acme', runId, pending.attestationId), { error: { status: 409, code: 'SVC_ERR_RUNS_ATTESTATION_PENDING' } });
    t.match(await ask('umbrella', runId, good.attestationId), { error: { status: 404, code: 'SVC_ERR_RUNS_NOT_FOUND' } }, 'another org: not found');
    const otherRun = await insertRun(db.pool, { orgId: 'acme', jobs: [{ name: 'x' }] });
    t.match(await ask('acme', otherRun.runId, good.attestationId), { error: { status: 404, code: 'SVC_ERR_RUNS_ATTESTATION_NOT_FOUND' } }, 'an attestation of another run is not found through this one');
    t.match(await ask('acme', runId, 'not-a-uuid'), { error: { status: 404, code: 'SVC_ERR_RUNS_ATTESTATION_NOT_FOUND' } });

    // The key is revoked: what it signed reads "revoked key" from then on.
    await revokeSigningKey(db.pool, good.bundle.kid, 'dashboard test');
    const revoked = await detailOf('acme', runId);
    t.match(revoked.attestations.find((a) => a.subject === 'dist/app.tgz')!.verification, { badge: 'revoked_key', reason: 'key_revoked', message: /revoked/ });
  });
});
