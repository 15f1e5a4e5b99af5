// Log search through every surface (docs/log-search.md) on a real relay and orchestrator
// (startPlatformStack): `svc logs search` in-process (text and --json, filters, refusals before
// anything is sent), `GET /v1/orgs/:orgId/logs/search` (viewer of the org; another org's token is
// refused; bad input is a 400 naming the problem), the dashboard's page (results with a link into
// the log viewer, a refused query shown above the form) and the header's search box, and the
// admin API's `GET /api/v1/admin/logs/search` (scope runs.read). The SQL itself is covered on
// both flavours by test/kernel/orchestrator/log-search/search.test.ts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createAdminToken } from '../../../kernel/orchestrator/admin-auth/index.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { runCli } from '../../fixtures/cli.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../fixtures/platform-stack.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { insertRun } from '../../fixtures/runs.ts';

const AT = '2026-12-01T10:00:00.000Z';

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const alice = stack.auth(await stack.pat('alice'));
  const mallory = stack.auth(await stack.pat('mallory', OTHER_ORG));
  const home = await mkdtemp(join(tmpdir(), 'svc-log-search-cli-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete env[name];
  const svc = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env });
  const login = await svc(['login', '--token', (alice.authorization ?? '').slice(7), '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);

  const seed = async (org: string, repository: string, texts: string[]) => {
    const run = await insertRun(db.pool, { orgId: org, repository, status: 'failed', jobs: [{ name: 'test', status: 'failed' }] });
    const jobId = run.all[0]!.id;
    await db.pool.query(sql.unsafe`INSERT INTO job_steps (job_id, index, name, status) VALUES (${jobId}, 0, 'install', 'completed'), (${jobId}, 1, 'unit', 'failed')`);
    const lines = texts.map((text, i) => ({ at: AT, step: i === 0 ? 'install' : 'unit', stream: 'stdout', text }));
    await db.pool.query(sql.unsafe`INSERT INTO job_logs (job_id, seq, lines) VALUES (${jobId}, 0, ${sql.jsonb(lines)})`);
    return run.runId;
  };
  const runId = await seed(ORG, 'acme/app', ['npm ci', 'running 12 tests', 'Error: connect ECONNREFUSED 127.0.0.1:6379', 'tests: 1 failed']);
  await seed(OTHER_ORG, 'umbrella/app', ['Error: connect ECONNREFUSED in umbrella']);

  await t.test('svc logs search: text, --json with filters, refusals before sending', async (t) => {
    const text = await svc(['logs', 'search', 'econnrefused']);
    t.equal(text.code, 0, text.stderr);
    t.match(text.stdout, new RegExp(`${runId} acme/app main ci \\(failed, [^)]+\\) › test › unit`));
    t.match(text.stdout, /    running 12 tests\n  > Error: connect ECONNREFUSED 127\.0\.0\.1:6379\n    tests: 1 failed/);
    t.notMatch(text.stdout, /umbrella/, "another org's line is not shown");
    const json = await svc(['logs', 'search', 'ECONNREFUSED', '--repository', 'acme/app', '--branch', 'main', '--workflow', 'ci', '--job', 'test', '--status', 'failed', '--since', '1d', '--context', '1', '--json']);
    t.equal(json.code, 0, json.stderr);
    const answer = JSON.parse(json.stdout);
    t.equal(answer.hits.length, 1);
    t.match(answer.hits[0], { runId, job: 'test', step: 'unit', stepIndex: 1, seq: 0, index: 2, before: ['running 12 tests'], after: ['tests: 1 failed'] });
    const none = await svc(['logs', 'search', 'ECONNREFUSED', '--repository', 'acme/other']);
    t.match(none.stdout, /no line contains "ECONNREFUSED"/);
    const short = await svc(['logs', 'search', 'ab']);
    t.not(short.code, 0);
    t.match(short.stderr, /too short to search for: include at least 3 letters or digits in a row/);
    const badDate = await svc(['logs', 'search', 'econnrefused', '--since', 'yesterday']);
    t.not(badDate.code, 0);
    t.match(badDate.stderr, /since "yesterday" is not a time/);
  });

  await t.test('GET /v1/orgs/:orgId/logs/search: the org viewer only, bad input is a 400', async (t) => {
    const get = async (query: string, headers: Record<string, string> = alice) => {
      const res = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/logs/search?${query}`, { headers });
      return { status: res.status, body: (await res.json()) as any };
    };
    const ok = await get('q=econnrefused&limit=5&context=0');
    t.equal(ok.status, 200);
    t.match(ok.body, { more: false, hits: [{ runId, text: 'Error: connect ECONNREFUSED 127.0.0.1:6379', before: [], after: [] }] });
    t.equal(ok.body.hits.length, 1);
    t.equal((await get('q=econnrefused', mallory)).status, 403, "another org's token is refused");
    t.equal((await get('q=econnrefused', {})).status, 401);
    for (const [query, pattern] of [
      ['q=', /the search text is empty/],
      ['q=a%25', /too short/],
      [`q=${'x'.repeat(201)}`, /at most 200/],
      ['q=econnrefused&since=2026-13-45', /not a time/],
      ['q=econnrefused&since=2026-12-02&until=2026-12-01', /is after until/],
    ] as const) {
      const bad = await get(query);
      t.equal(bad.status, 400, query);
      t.match(bad.body.error, { code: 'SVC_ERR_LOG_SEARCH_INVALID', message: pattern }, query);
    }
    t.equal((await get('q=econnrefused&limit=501')).status, 400, 'a limit over 500');
  });

  await t.test('the dashboard: a search box on every page, results linking into the log viewer', async (t) => {
    const page = async (path: string) => {
      const res = await fetch(`${stack.relayUrl}${path}`, { headers: alice });
      return { status: res.status, body: await res.text() };
    };
    const runs = await page(`/ui/orgs/${ORG}/runs`);
    t.match(runs.body, `<form method="get" action="/ui/orgs/${ORG}/logs/search" class="log-search-box" role="search">`);
    const found = await page(`/ui/orgs/${ORG}/logs/search?q=ECONNREFUSED&status=failed`);
    t.equal(found.status, 200);
    t.match(found.body, '<mark>Error: connect ECONNREFUSED 127.0.0.1:6379</mark>');
    t.match(found.body, `href="/ui/orgs/${ORG}/runs/${runId}/logs?job=test&amp;step=unit&amp;find=Error%3A%20connect%20ECONNREFUSED%20127.0.0.1%3A6379"`);
    t.notMatch(found.body, 'umbrella');
    const refused = await page(`/ui/orgs/${ORG}/logs/search?q=ab`);
    t.equal(refused.status, 400);
    t.match(refused.body, /<p class="error" id="log-search-error" role="alert">log search: &quot;ab&quot; is too short/);
    t.match(refused.body, 'id="log-search-form"', 'the form is shown again');
    const empty = await page(`/ui/orgs/${ORG}/logs/search`);
    t.equal(empty.status, 200);
    t.notMatch(empty.body, 'log-search-error', 'no query yet: only the form');
  });

  await t.test('the admin API: GET /api/v1/admin/logs/search needs runs.read and names the org', async (t) => {
    const reader = (await createAdminToken(db.pool, { name: 'log-reader', scopes: ['runs.read'], unrestricted: false, createdBy: 'test' })).token;
    const other = (await createAdminToken(db.pool, { name: 'dlq-reader', scopes: ['events.read'], unrestricted: false, createdBy: 'test' })).token;
    const get = (query: string, token: string) => fetch(`${stack.orchestrator.url}/api/v1/admin/logs/search?${query}`, { headers: { authorization: `Bearer ${token}` } });
    const ok = await get(`org=${OTHER_ORG}&q=econnrefused`, reader);
    t.equal(ok.status, 200);
    t.same(((await ok.json()) as any).hits.map((h: { repository: string }) => h.repository), ['umbrella/app']);
    const scope = await get(`org=${ORG}&q=econnrefused`, other);
    t.equal(scope.status, 403);
    t.match(await scope.json(), { error: { code: 'SVC_ERR_ADMIN_SCOPE_MISSING' } });
    const noOrg = await get('q=econnrefused', reader);
    t.equal(noOrg.status, 400, 'the org is required');
    const short = await get(`org=${ORG}&q=%20%20`, reader);
    t.equal(short.status, 400);
    t.match(await short.json(), { error: { code: 'SVC_ERR_LOG_SEARCH_INVALID' } });
  });
});
