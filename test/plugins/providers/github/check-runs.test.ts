// The `github` provider's reportRunStatus against the fake GitHub REST API with the real Octokit
// client: a check run created on the run's commit and updated in place (queued → in_progress →
// completed with a conclusion, output and link), GitHub's documented body shape (the fake refuses
// anything else with 422), runs that are not on a commit and sources that turned check runs off
// skipped before any request, a vanished check run re-created, and errors carrying the status.
import { pino } from 'pino';
import t from 'tap';
import { createPluginHost } from '../../../../core/plugins/index.ts';
import type { ProviderSource, RepositoryRef, RunStatusReport } from '../../../../core/extension-points/provider.ts';
import { GithubAppClient, githubProvider, githubSourceOf } from '../../../../plugins/providers/github/index.ts';
import { generateAppKeyPair, startFakeGithub } from '../../../fixtures/fake-github.ts';

const APP_ID = '4343';
const keys = generateAppKeyPair();
const SHA = 'c'.repeat(40);
const repository: RepositoryRef = { id: '42', fullName: 'acme/app', installationId: '77' };

async function setup(t: { teardown(fn: () => unknown): void }, settings: Record<string, unknown> = {}) {
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation('77', ['acme/app']);
  const host = createPluginHost({ config: { 'provider:github': {} } });
  await host.signInAll({ builtIns: [githubProvider] });
  t.teardown(() => host.close());
  const github = host.get('provider', 'github');
  const source: ProviderSource = { id: 'src-1', orgId: 'acme', routingKey: `github:${APP_ID}`, settings: { appId: APP_ID, apiBaseUrl: fake.url, ...settings }, credentials: { privateKey: keys.privateKeyPem } };
  return { fake, github, source };
}

function report(source: ProviderSource, over: Partial<Omit<RunStatusReport, 'run'>> & { run?: Partial<RunStatusReport['run']> } = {}): RunStatusReport {
  const { run, ...rest } = over;
  return {
    source,
    repository,
    run: {
      id: '11111111-2222-4333-8444-555555555555',
      orgId: 'acme',
      workflow: 'ci',
      sha: SHA,
      ref: 'refs/heads/main',
      eventName: 'push',
      status: 'queued',
      reason: null,
      createdAt: '2030-01-01T10:00:00.000Z',
      startedAt: null,
      finishedAt: null,
      url: 'https://ci.example.test/v1/orgs/acme/runs/11111111-2222-4333-8444-555555555555',
      ...run,
    },
    state: 'queued',
    conclusion: null,
    title: 'ci: queued',
    summary: '**ci** queued',
    externalId: null,
    ...rest,
  };
}

t.test('created queued, then updated in place to in_progress and completed', async (t) => {
  const { fake, github, source } = await setup(t);
  const created = await github.reportRunStatus!(report(source));
  t.match(created, { outcome: 'reported', externalId: /^\d+$/ });
  const id = created.outcome === 'reported' ? created.externalId : '';
  t.match(fake.checkRunRequests[0], {
    method: 'POST',
    repository: 'acme/app',
    status: 201,
    body: { name: 'ci', head_sha: SHA, status: 'queued', external_id: '11111111-2222-4333-8444-555555555555', details_url: /^https:\/\/ci\.example\.test\//, output: { title: 'ci: queued', summary: '**ci** queued' } },
  });
  t.notOk('conclusion' in fake.checkRunRequests[0]!.body, 'no conclusion while queued');

  const running = await github.reportRunStatus!(report(source, { state: 'in_progress', externalId: id, title: 'ci: running', run: { status: 'running', startedAt: '2030-01-01T10:00:05.000Z' } }));
  t.same(running, { outcome: 'reported', externalId: id }, 'the same check run');
  t.match(fake.checkRunRequests[1], { method: 'PATCH', id: Number(id), status: 200, body: { status: 'in_progress', started_at: '2030-01-01T10:00:05.000Z' } });
  t.notOk('head_sha' in fake.checkRunRequests[1]!.body, 'an update sends no head_sha');

  const done = await github.reportRunStatus!(
    report(source, {
      state: 'completed',
      conclusion: 'success',
      externalId: id,
      title: 'ci: passed',
      summary: '**ci** passed\n\n| Job | Status |',
      run: { status: 'completed', startedAt: '2030-01-01T10:00:05.000Z', finishedAt: '2030-01-01T10:01:00.000Z' },
    }),
  );
  t.same(done, { outcome: 'reported', externalId: id });
  t.equal(fake.checkRuns.size, 1, 'one check run for the whole run');
  t.match(fake.checkRuns.get(Number(id)), {
    name: 'ci',
    head_sha: SHA,
    status: 'completed',
    conclusion: 'success',
    completed_at: '2030-01-01T10:01:00.000Z',
    external_id: '11111111-2222-4333-8444-555555555555',
    output: { title: 'ci: passed', summary: /\| Job \| Status \|/ },
  });
  t.equal(fake.calls.access_tokens, 1, 'the installation token is reused');
});

t.test('every conclusion GitHub knows; a first report may already be completed', async (t) => {
  const { fake, github, source } = await setup(t);
  for (const conclusion of ['success', 'failure', 'cancelled', 'skipped', 'timed_out', 'neutral'] as const) {
    const result = await github.reportRunStatus!(report(source, { state: 'completed', conclusion, run: { status: conclusion, finishedAt: '2030-01-01T10:01:00.000Z' } }));
    t.equal(result.outcome, 'reported', conclusion);
    const id = result.outcome === 'reported' ? Number(result.externalId) : 0;
    t.match(fake.checkRuns.get(id), { status: 'completed', conclusion }, `${conclusion}: created completed`);
  }
  t.ok(fake.checkRunRequests.every((r) => r.status === 201), 'GitHub accepted every body');
});

t.test('no commit, or check runs turned off: skipped before any request', async (t) => {
  const { fake, github, source } = await setup(t);
  for (const sha of ['', 'main', '--output=/tmp/x', 'C'.repeat(40)]) {
    const result = await github.reportRunStatus!(report(source, { run: { sha } }));
    t.match(result, { outcome: 'skipped', reason: /not on a commit/ }, JSON.stringify(sha));
  }
  const off = await setup(t, { checkRuns: false });
  t.match(await off.github.reportRunStatus!(report(off.source)), { outcome: 'skipped', reason: /turned off/ });
  t.same(fake.log, [], 'no request at all');
  t.same(off.fake.log, []);
});

t.test('a check run deleted on GitHub is created again', async (t) => {
  const { fake, github, source } = await setup(t);
  const result = await github.reportRunStatus!(report(source, { state: 'in_progress', externalId: '999999', run: { status: 'running' } }));
  t.match(result, { outcome: 'reported', externalId: /^\d+$/ });
  t.not(result.outcome === 'reported' && result.externalId, '999999');
  t.same(fake.checkRunRequests.map((r) => [r.method, r.status]), [['PATCH', 404], ['POST', 201]]);
});

t.test('errors keep GitHub\'s status: 5xx retryable, 422 a refusal', async (t) => {
  const { fake, github, source } = await setup(t);
  fake.failCheckRuns = { status: 500, count: 1 };
  await t.rejects(github.reportRunStatus!(report(source)), { code: 'SVC_ERR_GITHUB_CHECK_RUN_FAILED', kind: 'unavailable', details: { statusCode: 500 } });
  fake.failCheckRuns = { status: 422, count: 1 };
  await t.rejects(github.reportRunStatus!(report(source)), { code: 'SVC_ERR_GITHUB_CHECK_RUN_REFUSED', kind: 'input', details: { statusCode: 422 } });
  fake.failCheckRuns = { status: 403, count: 1 };
  await t.rejects(github.reportRunStatus!(report(source)), { code: 'SVC_ERR_GITHUB_CHECK_RUN_FAILED', details: { statusCode: 403 } }, 'a missing permission may be granted later: retried');
  t.match(await github.reportRunStatus!(report(source)), { outcome: 'reported' }, 'works again');
});

t.test('the fake refuses what GitHub refuses', async (t) => {
  const { fake, source } = await setup(t);
  // Straight to the fake with an installation token, as a wrong client would.
  const client = new GithubAppClient({ logger: pino({ level: 'silent' }), refreshMarginMs: 60_000, requestTimeoutMs: 5_000 });
  const octokit = await client.installationOctokit(githubSourceOf(source), '77');
  const post = (body: Record<string, unknown>) => octokit.request('POST /repos/{owner}/{repo}/check-runs', { owner: 'acme', repo: 'app', ...(body as { name: string; head_sha: string }) }).then(() => 201, (e: { status: number }) => e.status);
  t.equal(await post({ name: 'ci', head_sha: SHA, status: 'completed', output: { title: 't', summary: 's' } }), 422, 'completed without a conclusion');
  t.equal(await post({ name: 'ci', head_sha: SHA, conclusion: 'passed', output: { title: 't', summary: 's' } }), 422, 'an unknown conclusion');
  t.equal(await post({ name: 'ci', head_sha: 'main', output: { title: 't', summary: 's' } }), 422, 'head_sha not a sha');
  t.equal(await post({ name: 'ci', head_sha: SHA, output: { summary: 's' } }), 422, 'output without a title');
  t.equal(await post({ head_sha: SHA }), 422, 'no name');
  t.equal(await post({ name: 'ci', head_sha: SHA, status: 'in_progress', started_at: 'yesterday' }), 422, 'started_at not ISO 8601');
  t.equal(await post({ name: 'ci', head_sha: SHA, colour: 'red' }), 422, 'an unknown key');
  t.equal(await post({ name: 'ci', head_sha: SHA, status: 'completed', conclusion: 'success', output: { title: 't', summary: 's' } }), 201);
});
