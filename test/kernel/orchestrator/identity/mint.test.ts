import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { IDENTITY_CLAIM_NAMES } from '../../../../schemas/identity.ts';
import { createIdentityService } from '../../../../kernel/orchestrator/identity/service.ts';
import { publicKeySet } from '../../../../kernel/orchestrator/identity/key-store.ts';
import { KEY_WAIT_MS } from '../../../../kernel/orchestrator/identity/mint.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { seal } from '../../../../kernel/services/crypto/sealing.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { FORK_PR, PUSH_RUN, SAME_REPO_PR, boundDbCustody, insertRunJob, masterKeys, migrateOrchestrator, silent } from './fixtures.ts';
import { policyAdmits } from './trust-policy.ts';

const ISSUER = 'https://ci.example.test/tenant-a';

/** The custody with its keyId() calls counted: each call is one look for a ready key by the minter; a miss is a look that found none. */
function countingKeyId<T extends object & { keyId(): Promise<string> }>(custody: T): { custody: T; calls: () => number; misses: () => number } {
  let calls = 0;
  let misses = 0;
  const proxy = new Proxy(custody, {
    get(target, key) {
      if (key === 'keyId') {
        return async () => {
          calls += 1;
          try {
            return await target.keyId();
          } catch (error) {
            misses += 1;
            throw error;
          }
        };
      }
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { custody: proxy, calls: () => calls, misses: () => misses };
}

await eachDatabase(t, async (t, db) => {
  await migrateOrchestrator(db.pool);
  const keys = masterKeys();
  const custody = boundDbCustody(db.pool, keys);
  const service = createIdentityService({ pool: db.pool, custody, custodyKind: 'db', issuer: `${ISSUER}/`, orchestratorId: 'orch-a', logger: silent, keyWaitMs: 600 });

  await t.test('no key: mint waits, then defers with unavailable', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    const started = Date.now();
    const result = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    t.same(result, { deferred: true, code: 'unavailable' });
    t.ok(Date.now() - started >= 400, 'it waited for a key');
    t.equal(KEY_WAIT_MS, 7500, 'the default wait is the spec 7.5 s');
  });

  await t.test('a key generated while mint waits is used', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    const counted = countingKeyId(custody);
    const slow = createIdentityService({ pool: db.pool, custody: counted.custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'orch-a', logger: silent, keyWaitMs: 60_000 });
    const pending = slow.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    // The minter has looked for a key and found none: it is in its wait.
    while (counted.misses() < 1) await new Promise((r) => setImmediate(r));
    await custody.generate();
    const result = await pending;
    t.ok('token' in result);
    t.equal(counted.calls(), counted.misses() + 1, 'found on the first look after the key was generated');
  });

  const verify = async (token: string, audience = 'sts.example') => {
    const jwks = createLocalJWKSet((await publicKeySet(db.pool)) as never);
    return (await jwtVerify(token, jwks, { issuer: ISSUER, audience, algorithms: ['ES256'] })).payload as Record<string, unknown>;
  };

  await t.test('claims: push run', async (t) => {
    const { runId, jobId, agentId } = await insertRunJob(db.pool, PUSH_RUN);
    const result = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    if (!('token' in result)) throw new Error('deferred');
    t.equal(result.expiresIn, 600);
    const header = decodeProtectedHeader(result.token);
    t.equal(header.alg, 'ES256');
    t.equal(header.kid, await custody.keyId());
    const claims = await verify(result.token);
    t.same(Object.keys(claims).sort(), [...IDENTITY_CLAIM_NAMES].sort(), 'every claim present, nothing else');
    t.match(claims, {
      iss: ISSUER,
      aud: 'sts.example',
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
      attestation_origin: 'live',
      statement_hash: null,
      workflow_repository: 'acme/widgets',
    });
    t.equal((claims['exp'] as number) - (claims['iat'] as number), 600);
    t.equal(claims['nbf'], claims['iat']);
    t.ok(policyAdmits(claims, [{ sub: 'repo:acme/widgets:ref:refs/heads/main:workflow:ci', repository: 'acme/widgets', pullRequest: false }]));
  });

  const PR_POLICY = [
    { sub: 'repo:acme/widgets:ref:refs/heads/main:workflow:ci', repository: 'acme/widgets', pullRequest: false },
    { sub: 'repo:acme/widgets:pull_request', repository: 'acme/widgets', pullRequest: true },
  ];

  await t.test('claims: same-repository pull request', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool, SAME_REPO_PR);
    const result = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    if (!('token' in result)) throw new Error('deferred');
    const claims = await verify(result.token);
    t.match(claims, {
      sub: 'repo:acme/widgets:pull_request',
      ref: 'refs/heads/main',
      base_ref: 'refs/heads/main',
      head_ref: 'feature-x',
      head_repository: 'acme/widgets',
      is_fork: 'false',
      event_name: 'pull_request:opened',
    });
    t.ok(policyAdmits(claims, PR_POLICY), 'admitted by the two-statement policy');
    t.notOk(policyAdmits(claims, PR_POLICY.slice(0, 1)), 'a branch-pinned policy never matches a pull request');
  });

  await t.test('claims: fork pull request fails the recommended policy', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool, FORK_PR);
    const result = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    if (!('token' in result)) throw new Error('deferred');
    const claims = await verify(result.token);
    t.match(claims, { sub: 'repo:acme/widgets:pull_request', is_fork: 'true', head_repository: 'mallory/widgets', trust_tier: 'unknown', actor: 'mallory' });
    t.notOk(policyAdmits(claims, PR_POLICY));
  });

  await t.test('unresolved values fail closed', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool, { ...SAME_REPO_PR, is_fork: 'unresolved', trust_tier: 'unresolved', ref: null });
    const result = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    if (!('token' in result)) throw new Error('deferred');
    const claims = await verify(result.token);
    t.match(claims, { is_fork: 'unresolved', trust_tier: 'unresolved', ref: '', base_ref: '' });
    t.notOk(policyAdmits(claims, PR_POLICY));
  });

  await t.test('re-run keeps the parent subject and reads rerun; org-wide workflow repository', async (t) => {
    const parent = await insertRunJob(db.pool, SAME_REPO_PR);
    const { jobId, agentId } = await insertRunJob(db.pool, { ...SAME_REPO_PR, parent_run_id: parent.runId, workflow_repository: 'acme/.workflows' });
    const result = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    if (!('token' in result)) throw new Error('deferred');
    const claims = await verify(result.token);
    t.match(claims, { sub: 'repo:acme/widgets:pull_request', event_name: 'rerun', workflow_repository: 'acme/.workflows' });
  });

  await t.test('only the agent running the job may mint; bad input changes nothing', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    await t.rejects(service.mintIdentityToken({ jobId, agentId: 'agent-2', audience: 'x' }), { code: 'SVC_ERR_IDENTITY_NOT_OWNER' });
    await t.rejects(service.mintIdentityToken({ jobId: 'not-a-uuid', agentId, audience: 'x' }), { code: 'SVC_ERR_IDENTITY_NOT_OWNER' });
    const done = await insertRunJob(db.pool, {}, { status: 'completed' });
    await t.rejects(service.mintIdentityToken({ jobId: done.jobId, agentId: done.agentId, audience: 'x' }), { code: 'SVC_ERR_IDENTITY_NOT_OWNER' });
    const unassigned = await insertRunJob(db.pool, {}, { agentId: null, status: 'queued' });
    await t.rejects(service.mintIdentityToken({ jobId: unassigned.jobId, agentId: 'agent-1', audience: 'x' }), { code: 'SVC_ERR_IDENTITY_NOT_OWNER' });
    for (const audience of ['', 'a\nb', 'x'.repeat(1001)]) {
      await t.rejects(service.mintIdentityToken({ jobId, agentId, audience }), { code: 'SVC_ERR_IDENTITY_AUDIENCE' });
    }
    const wire = await service.answerOidcTokenRequest('agent-2', { type: 'oidc.token.request', jobId, requestId: 'r1', audience: 'x' });
    t.match(wire, { type: 'protocol.error', requestId: 'r1', error: { code: 'SVC_ERR_IDENTITY_NOT_OWNER' } });
    const ok = await service.answerOidcTokenRequest(agentId, { type: 'oidc.token.request', jobId, requestId: 'r2', audience: 'x' });
    t.match(ok, { type: 'oidc.token.response', requestId: 'r2', expiresIn: 600, token: /^ey/ });
  });

  await t.test('a key that cannot be unsealed defers at once', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    const kid = await custody.keyId();
    const good = await db.pool.oneFirst(sql.unsafe`SELECT private_key_sealed FROM signing_keys WHERE kid = ${kid}`);
    await db.pool.query(sql.unsafe`UPDATE signing_keys SET private_key_sealed = ${seal(randomBytes(32), 'x', `signing-key:${kid}`)} WHERE kid = ${kid}`);
    const fresh = countingKeyId(boundDbCustody(db.pool, keys));
    const other = createIdentityService({ pool: db.pool, custody: fresh.custody, custodyKind: 'db', issuer: ISSUER, orchestratorId: 'orch-a', logger: silent });
    t.same(await other.mintIdentityToken({ jobId, agentId, audience: 'x' }), { deferred: true, code: 'key_unavailable' });
    t.equal(fresh.calls(), 1, 'deferred after the first look for a key: no wait for one (a wait looks again every 250 ms)');
    await db.pool.query(sql.unsafe`UPDATE signing_keys SET private_key_sealed = ${good as string} WHERE kid = ${kid}`);
  });

  await t.test('rotate: tokens minted before verify while retiring and retired; revoke makes them fail', async (t) => {
    const { jobId, agentId } = await insertRunJob(db.pool);
    const before = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    if (!('token' in before)) throw new Error('deferred');
    const oldKid = decodeProtectedHeader(before.token).kid as string;
    const rotated = await custody.rotate();
    const after = await service.mintIdentityToken({ jobId, agentId, audience: 'sts.example' });
    if (!('token' in after)) throw new Error('deferred');
    t.equal(decodeProtectedHeader(after.token).kid, rotated.kid, 'new tokens use the new key');
    await verify(before.token);
    t.pass('verifies while retiring');
    const { retireSigningKey, revokeSigningKey } = await import('../../../../kernel/orchestrator/identity/key-store.ts');
    await retireSigningKey(db.pool, oldKid);
    await verify(before.token);
    t.pass('verifies while retired');
    await revokeSigningKey(db.pool, oldKid, 'test');
    await t.rejects(verify(before.token), { code: 'ERR_JWKS_NO_MATCHING_KEY' }, 'fails once revoked');
    await verify(after.token);
  });
});
