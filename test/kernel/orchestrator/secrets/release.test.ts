// Protection rules (pure) and the release at dispatch against the real orchestrator and a real
// WebSocket agent: passing contexts put their secrets into jobConfig.secrets; a refused rule
// fails the job at once with the context and rule named, sends the agent nothing, and skips
// the jobs that need it.
import { pino } from 'pino';
import t from 'tap';
import {
  bindContext,
  checkContextRules,
  createContext,
  declaredContexts,
  flattenSecrets,
  releaseJobSecrets,
  setSecret,
  type SecretContext,
} from '../../../../kernel/orchestrator/secrets/index.ts';
import { parseMasterKey } from '../../../../kernel/services/crypto/sealing.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase, type Test } from '../../../fixtures/db.ts';
import { insertRun, jobRow, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startNode } from '../dispatch/harness.ts';

const KEY_TEXT = 'a'.repeat(64);
const silent = pino({ level: 'silent' });

function ctx(over: Partial<SecretContext> = {}): SecretContext {
  return { name: 'deploy', branches: [], repositories: ['acme/*'], orgs: [], minTrust: 'trusted', allowLocalExecution: false, requiredReviewers: [], waitTimerSeconds: 0, concurrencyLimit: null, bound: true, createdAt: '', updatedAt: '', ...over };
}
const RUN = { orgId: 'org-1', repository: 'acme/widgets', ref: 'refs/heads/main', trustTier: 'trusted', isTestRun: false };

t.test('rules', async (t) => {
  t.same(checkContextRules(ctx(), RUN), { ok: true });
  t.match(checkContextRules(ctx({ repositories: [], orgs: [], bound: false }), RUN), { ok: false, rule: 'binding', reason: /bound to no repository/ });
  t.match(checkContextRules(ctx({ repositories: ['other/*'] }), RUN), { ok: false, rule: 'binding', reason: /secret context "deploy" refused by rule binding: repository "acme\/widgets"/ });
  t.same(checkContextRules(ctx({ repositories: [], orgs: ['org-1'] }), RUN), { ok: true }, 'bound by org');
  t.same(checkContextRules(ctx({ repositories: ['ACME/Widgets'] }), RUN), { ok: true }, 'repository patterns ignore case');
  t.same(checkContextRules(ctx({ branches: ['main'] }), RUN), { ok: true });
  t.same(checkContextRules(ctx({ branches: ['release/*'] }), { ...RUN, ref: 'refs/heads/release/1.2' }), { ok: true });
  t.match(checkContextRules(ctx({ branches: ['release/*'] }), RUN), { ok: false, rule: 'branches', reason: /branch "main" matches none of \["release\/\*"\]/ });
  t.match(checkContextRules(ctx({ branches: ['main'] }), { ...RUN, ref: 'refs/tags/v1' }), { ok: false, rule: 'branches', reason: /not a branch/ });
  t.match(checkContextRules(ctx({ branches: ['main'] }), { ...RUN, ref: null }), { ok: false, rule: 'branches', reason: /\(none\)/ });
  t.match(checkContextRules(ctx(), { ...RUN, trustTier: 'unknown' }), { ok: false, rule: 'minTrust', reason: /trust tier is unknown; the context requires trusted/ });
  t.same(checkContextRules(ctx({ minTrust: 'any' }), { ...RUN, trustTier: 'unresolved' }), { ok: true });
  t.match(checkContextRules(ctx({ repositories: ['other/*'] }), { ...RUN, isTestRun: true }), { ok: false, rule: 'allowLocalExecution' }, 'test runs: checked first');
  t.same(checkContextRules(ctx({ allowLocalExecution: true }), { ...RUN, isTestRun: true }), { ok: true });
});

t.test('declared contexts and flattening', async (t) => {
  t.same(declaredContexts({ contexts: ['a', 'b'] }, { contexts: ['b', 'c'] }), ['a', 'b', 'c']);
  t.same(declaredContexts({}, undefined), []);
  t.same(declaredContexts(null, { contexts: 'nope' }), []);
  t.same(flattenSecrets({ a: { X: '1', ONLY_A: '2' }, b: { X: '3' } }), { 'a:X': '1', 'a:ONLY_A': '2', 'b:X': '3', ONLY_A: '2' }, 'a shared key only qualified');
});

t.test('release at dispatch', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_SECRET_KEY: KEY_TEXT });
    const key = parseMasterKey(KEY_TEXT);
    await createContext(db.pool, { name: 'deploy', branches: ['main'], repositories: ['acme/*'] });
    await setSecret(db.pool, key, 'deploy', 'TOKEN', 'tok-value-123456');
    await setSecret(db.pool, key, 'deploy', 'SHARED', 'shared-from-deploy');
    await createContext(db.pool, { name: 'common', orgs: ['org-1'], minTrust: 'any' });
    await setSecret(db.pool, key, 'common', 'SHARED', 'shared-from-common');
    await createContext(db.pool, { name: 'prod', branches: ['release/*'], repositories: ['acme/*'] });
    await setSecret(db.pool, key, 'prod', 'PROD_TOKEN', 'prod-value-654321');
    await createContext(db.pool, { name: 'unbound' });

    await t.test('passing contexts: secrets in jobConfig, workflow contexts included', async (t) => {
      const run = await insertRun(db.pool, { jobs: [{ name: 'deploy', runsOn: ['hold'], lock: { contexts: ['deploy'] } }, { name: 'plain', runsOn: ['hold'] }] });
      await db.pool.query(sql.unsafe`UPDATE runs SET lock_entry = lock_entry || '{"contexts":["common"]}'::jsonb WHERE id = ${run.runId}`);
      const agent = await TestAgent.online({ url: node.url, agentId: 'ok-agent', labels: ['hold'] });
      t.teardown(() => agent.close());
      // Both jobs are ready at once: the dispatcher may hand either over first.
      const ids = [run.jobs['deploy']!.id, run.jobs['plain']!.id];
      const dispatched = new Map<string, Awaited<ReturnType<typeof agent.waitFor<'job.dispatch'>>>>();
      for (let i = 0; i < 2; i++) {
        const m = await agent.waitFor('job.dispatch', (m) => ids.includes(m.jobId) && !dispatched.has(m.jobId));
        dispatched.set(m.jobId, m);
        agent.jobStatus(m.jobId, 'completed');
      }
      t.same(dispatched.get(ids[0]!)!.jobConfig.secrets, { 'common:SHARED': 'shared-from-common', 'deploy:SHARED': 'shared-from-deploy', 'deploy:TOKEN': 'tok-value-123456', TOKEN: 'tok-value-123456' });
      t.same(dispatched.get(ids[1]!)!.jobConfig.secrets, { 'common:SHARED': 'shared-from-common', SHARED: 'shared-from-common' }, 'workflow-level context only');
    });

    const refused = async (t: Test, lock: Record<string, unknown>, reason: RegExp, runOver: Record<string, unknown> = {}) => {
      const run = await insertRun(db.pool, { ...runOver, jobs: [{ name: 'deploy', runsOn: ['deny'], lock }, { name: 'after', runsOn: ['deny'], needs: ['deploy'] }] });
      const agent = await TestAgent.online({ url: node.url, agentId: `deny-${Math.random().toString(36).slice(2, 8)}`, labels: ['deny'] });
      t.teardown(() => agent.close());
      const failed = await until('the job failed', async () => {
        const row = await jobRow(db.pool, run.jobs['deploy']!.id);
        return row.status === 'failed' ? row : undefined;
      });
      t.match(failed.reason, reason);
      t.match(failed.reason, /nothing was released/);
      t.equal(failed.attempts, 1, 'failed at once, not retried');
      t.equal(agent.received.filter((m) => m.type === 'job.dispatch').length, 0, 'the agent got nothing');
      t.equal((await jobRow(db.pool, run.jobs['after']!.id)).status, 'skipped', 'the dependent is skipped');
      const runState = await until('the run failed', async () => {
        const r = await runRow(db.pool, run.runId);
        return r.status === 'failed' ? r : undefined;
      });
      t.equal(runState.status, 'failed');
    };

    await t.test('refused: branch rule', (t) => refused(t, { contexts: ['prod'] }, /secret context "prod" refused by rule branches: branch "main" matches none of \["release\/\*"\]/));
    await t.test('refused: unknown context', (t) => refused(t, { contexts: ['ghost'] }, /secret context "ghost" does not exist/));
    await t.test('refused: unbound context', (t) => refused(t, { contexts: ['unbound'] }, /refused by rule binding/));
    await t.test('refused: repository not bound', (t) => refused(t, { contexts: ['deploy'] }, /rule binding: repository "other\/app"/, { repository: 'other/app' }));
    await t.test('refused: minimum trust', (t) => refused(t, { contexts: ['deploy'] }, /rule minTrust: the run's trust tier is unknown/, { trustTier: 'unknown' }));
  });
});

t.test('test runs skip non-test contexts; no master key refuses', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await startNode(t, db.url, { SVC_SECRET_KEY: KEY_TEXT });
    const key = parseMasterKey(KEY_TEXT);
    await createContext(db.pool, { name: 'deploy', repositories: ['acme/*'] });
    await setSecret(db.pool, key, 'deploy', 'TOKEN', 'tok-value-123456');
    await createContext(db.pool, { name: 'testing', repositories: ['acme/*'], allowLocalExecution: true });
    await bindContext(db.pool, 'testing', { orgs: ['org-1'] });
    await setSecret(db.pool, key, 'testing', 'TEST_TOKEN', 'test-value-000000');
    const base = { orgId: 'org-1', repository: 'acme/widgets', ref: 'refs/heads/main', trustTier: 'trusted', kind: 'job', lockEntry: {}, lockJob: { contexts: ['deploy', 'testing'] }, jobId: 'j' };
    const keys = { current: key, all: [{ name: 'current', key }] };
    t.same(await releaseJobSecrets(db.pool, keys, { ...base, isTestRun: true }, silent), { 'testing:TEST_TOKEN': 'test-value-000000', TEST_TOKEN: 'test-value-000000' });
    t.same(await releaseJobSecrets(db.pool, keys, { ...base, kind: 'build', isTestRun: false }, silent), undefined, 'build jobs get none');
    t.same(await releaseJobSecrets(db.pool, keys, { ...base, lockJob: { contexts: [] }, isTestRun: false }, silent), undefined);
    await t.rejects(releaseJobSecrets(db.pool, undefined, { ...base, isTestRun: false }, silent), { code: 'SVC_ERR_SECRETS_DENIED', permanent: true, message: /no master key/ });
  });
});
