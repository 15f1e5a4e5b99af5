// Runs on a github source reported as check runs, end to end: a real orchestrator (dispatch and
// forge-status subsystems, the built-in github provider with the real Octokit client) against the
// fake GitHub REST API, runs driven to their end by a test agent over the real agent protocol.
// A passing run ends as a check run `completed`/`success`, a failing one `failure` with the
// failure in its summary, each updated in place on its commit; with GitHub answering 500 for ever
// the deliveries end `failed` after the configured attempts and the run keeps its status.
import t from 'tap';
import { createSource } from '../../../../kernel/orchestrator/sources/store.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { generateAppKeyPair, startFakeGithub, type FakeGithub } from '../../../fixtures/fake-github.ts';
import { insertRun, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { deliveriesOf, deliveryDetail, MASTER_KEY, settled, startNode } from './harness.ts';


const APP_ID = '5151';
const keys = generateAppKeyPair();
const SHA_PASS = '1a'.repeat(20);
const SHA_FAIL = '2b'.repeat(20);
const SHA_DOWN = '3c'.repeat(20);

async function githubSource(pool: Parameters<typeof createSource>[0], fake: FakeGithub): Promise<string> {
  const created = await createSource(pool, MASTER_KEY, {
    orgId: 'org-1',
    providerKind: 'github',
    targetId: APP_ID,
    settings: { appId: APP_ID, apiBaseUrl: fake.url },
    credentials: { privateKey: keys.privateKeyPem },
  });
  return created.source.id;
}

/** The check runs on `sha`, once one of them shows `status`. */
async function checkRunOn(fake: FakeGithub, sha: string, status: string) {
  return until(
    `a ${status} check run on ${sha}`,
    () => [...fake.checkRuns.values()].find((c) => c.head_sha === sha && c.status === status),
    60_000,
    50,
  );
}

await eachDatabase(t, async (t, db) => {
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation('88', ['acme/widgets']);
  const orch = await startNode(t, db.url);
  const sourceId = await githubSource(db.pool, fake);
  const agent = await TestAgent.online({ url: orch.url, agentId: 'forge-agent', labels: ['linux'] });
  t.teardown(() => agent.close());

  await t.test('a passing run: one check run on its commit, completed with success', async (t) => {
    const { runId, jobs } = await insertRun(db.pool, { sourceId, sha: SHA_PASS, jobs: [{ name: 'build', runsOn: ['linux'] }] });
    const build = jobs['build']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === build);
    agent.jobStatus(build, 'running');
    await checkRunOn(fake, SHA_PASS, 'in_progress');
    agent.jobStatus(build, 'completed');
    await until('run completed', async () => ((await runRow(db.pool, runId)).status === 'completed' ? true : undefined), 30_000);
    const done = await checkRunOn(fake, SHA_PASS, 'completed');
    t.match(done, {
      name: 'ci',
      head_sha: SHA_PASS,
      conclusion: 'success',
      external_id: runId,
      details_url: `https://ci.example.test/orgs/org-1/runs/${runId}`,
      output: { title: 'ci: passed', summary: /\| build \| completed \|/ },
    });
    t.ok(done.started_at, 'started_at reported');
    t.ok(done.completed_at, 'completed_at reported');
    const requests = fake.checkRunRequests.filter((r) => (r.body['head_sha'] ?? fake.checkRuns.get(r.id ?? -1)?.head_sha) === SHA_PASS);
    t.equal(requests.filter((r) => r.method === 'POST').length, 1, 'created once');
    t.ok(requests.every((r) => r.status === 200 || r.status === 201), 'GitHub accepted every request body');
    t.equal([...fake.checkRuns.values()].filter((c) => c.head_sha === SHA_PASS).length, 1, 'later changes updated the same check run');

    const deliveries = await settled(orch, runId, 3);
    t.same(deliveries.map((d) => d.runStatus), ['queued', 'running', 'completed'], 'one delivery per run status change, in order');
    t.ok(deliveries.every((d) => d.target === 'provider' && d.providerKind === 'github' && d.sourceId === sourceId));
    const last = deliveries.at(-1)!;
    t.match(last, { status: 'delivered', state: 'completed', conclusion: 'success', externalId: String(done.id), attempts: 1 });
    t.ok(deliveries.every((d) => d.status === 'delivered' || d.status === 'superseded'), 'delivered, or replaced by a later state before it was sent');
  });

  await t.test('a failing run: completed with failure, the reason in the summary', async (t) => {
    const { runId, jobs } = await insertRun(db.pool, { sourceId, sha: SHA_FAIL, jobs: [{ name: 'unit', runsOn: ['linux'] }] });
    const unit = jobs['unit']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === unit);
    agent.jobStatus(unit, 'running');
    agent.jobStatus(unit, 'failed', { reason: 'tests failed: 3 of 120' });
    await until('run failed', async () => ((await runRow(db.pool, runId)).status === 'failed' ? true : undefined), 30_000);
    const done = await checkRunOn(fake, SHA_FAIL, 'completed');
    t.match(done, { name: 'ci', conclusion: 'failure', output: { title: 'ci: failed', summary: /job failed: unit[\s\S]*\| unit \| failed: tests failed: 3 of 120 \|/ } });
    t.equal([...fake.checkRuns.values()].filter((c) => c.head_sha === SHA_FAIL).length, 1, 'one check run');
    const deliveries = await settled(orch, runId, 3);
    t.match(deliveries.at(-1), { runStatus: 'failed', state: 'completed', conclusion: 'failure', status: 'delivered' });
  });

  await t.test('GitHub down for ever: deliveries fail after the bounded attempts, the run keeps its status', async (t) => {
    fake.failCheckRuns = { status: 500, count: Infinity };
    t.teardown(() => void (fake.failCheckRuns = null));
    const { runId, jobs } = await insertRun(db.pool, { sourceId, sha: SHA_DOWN, jobs: [{ name: 'lint', runsOn: ['linux'] }] });
    const lint = jobs['lint']!.id;
    await agent.waitFor('job.dispatch', (m) => m.jobId === lint);
    agent.jobStatus(lint, 'running');
    agent.jobStatus(lint, 'completed');
    await until('run completed', async () => ((await runRow(db.pool, runId)).status === 'completed' ? true : undefined), 30_000);
    const deliveries = await settled(orch, runId, 3);
    const failed = deliveries.filter((d) => d.status === 'failed');
    t.ok(failed.length >= 1, 'at least the last change failed');
    t.ok(deliveries.every((d) => d.status === 'failed' || d.status === 'superseded'), 'nothing was delivered');
    const last = deliveries.at(-1)!;
    t.match(last, { runStatus: 'completed', status: 'failed', attempts: 3, lastStatusCode: 500, lastError: /GitHub answered 500[\s\S]*attempt 3 of 3/ });
    const detail = await deliveryDetail(orch, last.id);
    t.same(detail.history.map((a) => [a.attempt, a.outcome, a.statusCode]), [[1, 'retry', 500], [2, 'retry', 500], [3, 'failed', 500]], 'every attempt recorded');
    t.equal([...fake.checkRuns.values()].filter((c) => c.head_sha === SHA_DOWN).length, 0, 'no check run was made');
    const run = await runRow(db.pool, runId);
    t.equal(run.status, 'completed', 'the run is untouched');
    const changes = (await db.pool.any(sql.unsafe`SELECT status FROM run_status_feed WHERE run_id = ${runId} AND job_id IS NULL ORDER BY seq`)) as readonly { status: string }[];
    t.same(changes.map((c) => c.status), ['queued', 'running', 'completed'], 'no status change came from the failures');

    // GitHub back: a new run reports again.
    fake.failCheckRuns = null;
    const again = await insertRun(db.pool, { sourceId, sha: SHA_DOWN, workflow: 'release', jobs: [{ name: 'pack', runsOn: ['nobody'] }] });
    await until('queued check run', () => [...fake.checkRuns.values()].find((c) => c.head_sha === SHA_DOWN && c.name === 'release'), 60_000, 50);
    t.match(await deliveriesOf(orch, again.runId), [{ runStatus: 'queued', state: 'queued', conclusion: null }]);
  });
});
