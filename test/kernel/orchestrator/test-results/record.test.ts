// Test results through the real path (startPlatformStack: relay, orchestrator, PostgreSQL; a
// TestAgent on the agent WebSocket): `tests.report.request` batches are stored per run, job and
// test; the last batch settles the step (failed by its tests, waived when every failure is
// quarantined); a test that passed and failed on one commit is marked flaky with the runs as
// evidence; quarantine entered and left through the API, the CLI and the dashboard records who
// and why; `svc tests [failed|flaky|history] --json` read it in-process; 20,000 results in one job
// are recorded and shown (counts). Another org sees none of it.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createAgentToken } from '../../../../kernel/orchestrator/dispatch/tokens.ts';
import { jobFailedOnlyByTests } from '../../../../kernel/orchestrator/test-results/queries.ts';
import { remoteTestLines } from '../../../../cli/remote-run/tests-lines.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import type { TestCase } from '../../../../schemas/wire/agent.ts';
import { runCli } from '../../../fixtures/cli.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';
import { insertRun } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';

const SHA = 'c'.repeat(40);
const REPO = 'acme/widgets';

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const { token } = await createAgentToken(db.pool);
  const agent = await TestAgent.connect({ url: stack.orchestrator.url, agentId: 'tests-agent', token, labels: ['linux'] });
  t.teardown(() => agent.close());
  await agent.waitFor('agent.registered');
  const alice = stack.auth(await stack.pat('alice'));
  const mallory = stack.auth(await stack.pat('mallory', OTHER_ORG));
  const home = await mkdtemp(join(tmpdir(), 'svc-tests-cli-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete baseEnv[name];
  const svc = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: baseEnv });
  const login = await svc(['login', '--token', (alice.authorization ?? '').slice(7), '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);

  /** A running job of a new run on SHA, dispatched to the test agent. */
  const runningJob = async (sha = SHA) => {
    const run = await insertRun(db.pool, { orgId: ORG, repository: REPO, sha, status: 'running', jobs: [{ name: 'unit', status: 'running' }] });
    const jobId = run.jobs['unit']!.id;
    await db.pool.query(sql.unsafe`update jobs set agent_id = 'tests-agent', attempts = 1 where id = ${jobId}`);
    return { runId: run.runId, jobId };
  };
  const report = async (jobId: string, results: TestCase[], final: { exitFailure?: boolean; problems?: string[] } | false = { exitFailure: false }) => {
    const requestId = randomUUID();
    agent.sendRaw({ type: 'tests.report.request', jobId, requestId, step: { index: 0, name: 'test' }, results, final: final !== false, ...(final === false ? {} : final) });
    return agent.waitFor('tests.report.response', (m) => m.requestId === requestId, 30_000);
  };
  const tc = (name: string, status: TestCase['status'], extra: Partial<TestCase> = {}): TestCase => ({ suite: 'math', name, status, durationMs: 10, ...extra });
  const api = async (path: string, init: RequestInit & { as?: Record<string, string> } = {}) => {
    const res = await fetch(`${stack.relayUrl}${path}`, { ...init, headers: { 'content-type': 'application/json', ...(init.as ?? alice) } });
    return { status: res.status, body: (await res.json()) as any };
  };

  const first = await runningJob();
  const second = await runningJob();
  const third = await runningJob();

  await t.test('only the agent running the job may report; an inactive job is refused', async (t) => {
    const other = await insertRun(db.pool, { orgId: ORG, repository: REPO, status: 'running', jobs: [{ name: 'x', status: 'running' }] });
    await db.pool.query(sql.unsafe`update jobs set agent_id = 'someone-else' where id = ${other.jobs['x']!.id}`);
    const refused = await report(other.jobs['x']!.id, [tc('adds', 'passed')]);
    t.equal(refused.error?.code, 'SVC_ERR_TESTS_JOB_NOT_OWNED');
    const unknown = await report(randomUUID(), [tc('adds', 'passed')]);
    t.equal(unknown.error?.code, 'SVC_ERR_TESTS_JOB_UNKNOWN');
    const n = (await db.pool.one(sql.unsafe`select count(*)::int as n from test_results`)) as { n: number };
    t.equal(n.n, 0, 'nothing stored');
  });

  await t.test('a failing run: stored, step failed by its tests, retry may ask', async (t) => {
    const part = await report(first.jobId, [tc('adds', 'passed')], false);
    t.same([part.failed, part.waived], [undefined, undefined], 'a batch before the last answers nothing yet');
    const answer = await report(first.jobId, [tc('flips', 'failed', { message: 'expected 1, got 2', output: 'at math.test.ts:3' }), tc('later', 'skipped')], { exitFailure: true });
    t.same([answer.failed, answer.quarantinedFailed, answer.waived], [1, 0, false]);
    t.equal(await jobFailedOnlyByTests(db.pool, first.jobId), true, 'this job failed only because of its tests');
    const withProblem = await runningJob('d'.repeat(40));
    await report(withProblem.jobId, [tc('adds', 'failed')], { exitFailure: true, problems: ['reports/x.xml is binary'] });
    t.equal(await jobFailedOnlyByTests(db.pool, withProblem.jobId), false, 'a file that could not be read: not only the tests');
    const view = await api(`/v1/orgs/${ORG}/runs/${first.runId}/tests`);
    t.equal(view.status, 200);
    t.match(view.body.run.counts, { total: 3, passed: 1, failed: 1, skipped: 1, errored: 0, quarantined: 0 });
    t.equal(view.body.run.results[0].name, 'flips', 'failures first');
    t.match(view.body.run.results[0], { status: 'failed', message: 'expected 1, got 2', output: 'at math.test.ts:3', jobName: 'unit', stepName: 'test', attempt: 1 });
    t.match(view.body.run.steps[0], { failedByTests: true, waived: false, exitFailure: true });
  });

  await t.test('passed and failed on one commit: flaky, with both runs as evidence', async (t) => {
    await report(second.jobId, [tc('adds', 'passed'), tc('flips', 'passed', { durationMs: 30 })]);
    const flaky = await svc(['tests', 'flaky', '--json']);
    t.equal(flaky.code, 0, flaky.stderr);
    const tests = JSON.parse(flaky.stdout).tests;
    t.equal(tests.length, 1);
    t.match(tests[0], { repository: REPO, suite: 'math', name: 'flips', sha: SHA, passedRuns: [second.runId], failedRuns: [first.runId], quarantined: false });
    const text = await svc(['tests', 'flaky']);
    t.match(text.stdout, /math › flips/);
  });

  await t.test('quarantine: entered through the API, a failure then waived, left through the CLI', async (t) => {
    const bad = await api(`/v1/orgs/${ORG}/tests/quarantine`, { method: 'POST', body: JSON.stringify({ action: 'add', suite: 'math', name: 'flips' }) });
    t.equal(bad.status, 400, 'a change without a reason is refused');
    const added = await api(`/v1/orgs/${ORG}/tests/quarantine`, { method: 'POST', body: JSON.stringify({ action: 'add', repository: REPO, suite: 'math', name: 'flips', reason: 'flaky, see #41' }) });
    t.equal(added.status, 200, JSON.stringify(added.body));
    t.match(added.body.entry, { repository: REPO, suite: 'math', name: 'flips', reason: 'flaky, see #41', addedBy: 'alice', removedAt: null });
    const again = await api(`/v1/orgs/${ORG}/tests/quarantine`, { method: 'POST', body: JSON.stringify({ action: 'add', repository: REPO, suite: 'math', name: 'flips', reason: 'twice' }) });
    t.equal(again.status, 409);
    const foreign = await api(`/v1/orgs/${ORG}/tests/quarantine`, { method: 'POST', as: mallory, body: JSON.stringify({ action: 'remove', repository: REPO, suite: 'math', name: 'flips', reason: 'no' }) });
    t.equal(foreign.status, 403, 'another org cannot change it');

    const answer = await report(third.jobId, [tc('adds', 'passed'), tc('flips', 'failed', { message: 'again' })], { exitFailure: true });
    t.same([answer.failed, answer.quarantinedFailed, answer.waived], [1, 1, true], 'every failure quarantined: waived');
    t.equal(await jobFailedOnlyByTests(db.pool, third.jobId), false, 'a waived step is not a failure to retry');
    const view = await api(`/v1/orgs/${ORG}/runs/${third.runId}/tests`);
    t.match(view.body.run.results[0], { name: 'flips', status: 'failed', quarantined: true }, 'the failure is still shown');
    t.match(view.body.run.steps[0], { waived: true });
    const both = await report((await runningJob()).jobId, [tc('flips', 'failed'), tc('adds', 'failed')], { exitFailure: true });
    t.same([both.failed, both.quarantinedFailed, both.waived], [2, 1, false], 'one failure not quarantined: not waived');

    const removed = await svc(['tests', 'quarantine', 'remove', 'flips', '--suite', 'math', '--repository', REPO, '--reason', 'fixed in #42', '--json']);
    t.equal(removed.code, 0, removed.stderr);
    t.match(JSON.parse(removed.stdout).entry, { removedBy: 'alice', removedReason: 'fixed in #42' });
    const active = JSON.parse((await svc(['tests', 'quarantine', 'list', '--json'])).stdout);
    t.same(active.entries, [], 'not in the active list');
    const all = JSON.parse((await svc(['tests', 'quarantine', 'list', '--all', '--json'])).stdout);
    t.match(all.entries[0], { name: 'flips', addedBy: 'alice', reason: 'flaky, see #41', removedBy: 'alice', removedReason: 'fixed in #42' }, 'leaving is recorded and listed');
    const none = await svc(['tests', 'quarantine', 'remove', 'flips', '--suite', 'math', '--repository', REPO, '--reason', 'again']);
    t.not(none.code, 0, 'removing what is not quarantined fails');
    // Org-wide: no repository, every repository of the org.
    const orgWide = await svc(['tests', 'quarantine', 'add', 'sometimes', '--suite', 'math', '--reason', 'org-wide flake', '--json']);
    t.equal(orgWide.code, 0, orgWide.stderr);
    t.equal(JSON.parse(orgWide.stdout).entry.repository, null);
    const elsewhere = await insertRun(db.pool, { orgId: ORG, repository: 'acme/other', sha: SHA, status: 'running', jobs: [{ name: 'unit', status: 'running' }] });
    await db.pool.query(sql.unsafe`update jobs set agent_id = 'tests-agent' where id = ${elsewhere.jobs['unit']!.id}`);
    const waived = await report(elsewhere.jobs['unit']!.id, [tc('sometimes', 'failed')], { exitFailure: true });
    t.same([waived.failed, waived.quarantinedFailed, waived.waived], [1, 1, true], 'an org-wide entry covers another repository');
  });

  await t.test('svc tests failed and history: newest first, failure rate, median duration', async (t) => {
    const failed = JSON.parse((await svc(['tests', 'failed', '--json'])).stdout);
    t.ok(failed.results.length >= 3);
    t.equal(failed.results.find((r: { name: string }) => r.name === 'flips').runId !== undefined, true);
    const history = await svc(['tests', 'history', 'flips', '--suite', 'math', '--json']);
    t.equal(history.code, 0, history.stderr);
    const h = JSON.parse(history.stdout).history;
    t.equal(h.results.length, 4);
    t.equal(h.failureRate, 3 / 4);
    t.equal(h.medianDurationMs, 10);
    t.equal(h.flaky.length, 1);
    t.equal(h.quarantine.length, 1);
    const text = await svc(['tests', 'history', 'flips']);
    t.match(text.stdout, /flips: 4 results, failure rate 75\.0%, median 10ms, flaky on 1 commit/);
    const run = await svc(['tests', '--run', first.runId]);
    t.match(run.stdout, /3 tests, 1 passed, 1 failed/);
    // What svc run remote prints under a run's result line, from the same route.
    const client = { runTests: async (id: string) => (await api(`/v1/orgs/${ORG}/runs/${id}/tests`)).body };
    t.same(await remoteTestLines(client, first.runId), ['  tests: 3 (1 passed, 1 failed, 0 errored, 1 skipped)', '    failed [unit] math › flips: expected 1, got 2']);
    t.same(await remoteTestLines({ runTests: async () => { throw new Error('an older orchestrator'); } }, first.runId), [], 'nothing when it cannot answer');
    const other = await api(`/v1/orgs/${ORG}/tests?view=failed`, { as: mallory });
    t.equal(other.status, 403, 'a token of another org reads nothing');
    const foreignRun = await api(`/v1/orgs/${ORG}/runs/${first.runId}/tests`, { as: mallory });
    t.equal(foreignRun.status, 403);
    const unknownRun = await api(`/v1/orgs/${ORG}/runs/${randomUUID()}/tests`);
    t.equal(unknownRun.status, 404);
    // A restart from failed jobs reuses a completed job (jobs.reused_from): its tests show on the new run.
    const restarted = await insertRun(db.pool, { orgId: ORG, repository: REPO, sha: SHA, status: 'running', jobs: [{ name: 'unit', status: 'running' }] });
    await db.pool.query(sql.unsafe`update jobs set reused_from = ${second.jobId} where id = ${restarted.jobs['unit']!.id}`);
    const reused = await api(`/v1/orgs/${ORG}/runs/${restarted.runId}/tests`);
    t.match(reused.body.run.counts, { total: 2, passed: 2 }, "the reused job's results");
    t.equal(reused.body.run.results[0].runId, second.runId, 'recorded under the run that ran them');
    const badView = await api(`/v1/orgs/${ORG}/tests?view=history`);
    t.equal(badView.status, 400, 'history needs a name');
  });

  await t.test('20,000 results in one job: recorded and shown', async (t) => {
    const big = await runningJob('e'.repeat(40));
    const all = Array.from({ length: 20_000 }, (_, i) => tc(`case ${i}`, i % 1000 === 0 ? 'failed' : 'passed', { suite: 'volume' }));
    for (let at = 0; at < all.length; at += 5000) {
      const last = at + 5000 >= all.length;
      const answer = await report(big.jobId, all.slice(at, at + 5000), last ? { exitFailure: true } : false);
      t.equal(answer.error, undefined);
      if (last) t.equal(answer.failed, 20);
    }
    const view = await api(`/v1/orgs/${ORG}/runs/${big.runId}/tests`);
    t.match(view.body.run.counts, { total: 20_000, passed: 19_980, failed: 20 });
    t.equal(view.body.run.results.filter((r: { status: string }) => r.status === 'failed').length, 20, 'every failure listed');
    t.equal(view.body.run.omitted, 20_000 - view.body.run.results.length);
    const page = await fetch(`${stack.relayUrl}/ui/orgs/${ORG}/runs/${big.runId}/tests`, { headers: alice });
    t.equal(page.status, 200);
    const html = await page.text();
    t.match(html, /<strong>20000<\/strong> tests: 19980 passed, 20 failed/);
    t.match(html, /data-failed="20"/);
  });
});
