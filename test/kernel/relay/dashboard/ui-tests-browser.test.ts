// The dashboard's test pages in Debian's Chromium (playwright-core) against a real relay and
// orchestrator (startPlatformStack); results recorded as the agent's tests.report.request stores
// them (record.ts). Checked, leanly: a run's Tests tab lists failures first with their message and
// a link to the step's log; a test's history page draws its sparkline (inline SVG, one bar per
// result); the Tests page lists the flaky test with both runs; quarantining from the history page
// (the form, with its CSRF token) puts it on the quarantine list with who and why, and leaving
// quarantine keeps the entry with who took it out.
import { existsSync } from 'node:fs';
import t from 'tap';
import { recordTestReport } from '../../../../kernel/orchestrator/test-results/record.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import type { TestCase } from '../../../../schemas/wire/agent.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { insertRun } from '../../../fixtures/runs.ts';

const CHROMIUM = '/usr/bin/chromium';
const SHA = 'f'.repeat(40);

if (!existsSync(CHROMIUM) && process.env['CI'] === undefined) {
  t.plan(0, `browser tests need Debian's chromium at ${CHROMIUM}; skipped because CI is not set`);
} else {
  await eachDatabase(t, async (t, db) => {
    const stack = await startPlatformStack(t, db);
    const pat = await stack.pat('alice');
    const tc = (name: string, status: TestCase['status'], extra: Partial<TestCase> = {}): TestCase => ({ suite: 'ui', name, status, durationMs: 20, ...extra });
    const recorded = async (results: TestCase[], exitFailure: boolean) => {
      const run = await insertRun(db.pool, { orgId: ORG, repository: 'acme/widgets', sha: SHA, status: 'running', jobs: [{ name: 'unit', status: 'running' }] });
      const jobId = run.jobs['unit']!.id;
      await db.pool.query(sql.unsafe`update jobs set agent_id = 'ui-agent', attempts = 1 where id = ${jobId}`);
      await recordTestReport(db.pool, 'ui-agent', { type: 'tests.report.request', jobId, requestId: 'r', step: { index: 0, name: 'unit tests' }, results, final: true, exitFailure });
      // The step's log as the agent would have stored it: the failing test's line well below the step's first.
      const at = new Date().toISOString();
      const lines = [
        ...Array.from({ length: 30 }, (_, i) => ({ at, step: 'unit tests', stream: 'stdout', text: `setting up ${i}` })),
        { at, step: 'unit tests', stream: 'stdout', text: `${exitFailure ? 'not ok' : 'ok'} 2 - wobbles` },
      ];
      await db.pool.query(sql.unsafe`insert into job_logs (job_id, seq, lines) values (${jobId}, 0, ${sql.jsonb(lines)})`);
      return run.runId;
    };
    const failedRun = await recorded([tc('renders', 'passed', { durationMs: 5 }), tc('wobbles', 'failed', { message: 'expected <b>1</b>, got 2', output: 'at ui.test.ts:9', durationMs: 80 })], true);
    const passedRun = await recorded([tc('renders', 'passed'), tc('wobbles', 'passed', { durationMs: 40 })], false);

    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    t.teardown(() => browser.close());
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    const base = `${stack.relayUrl}/ui/orgs/${ORG}`;
    await page.goto(`${stack.relayUrl}/signin?next=${encodeURIComponent(`/ui/orgs/${ORG}/runs`)}`);
    await page.fill('#token', pat);
    await Promise.all([page.waitForURL(/\/runs$/), page.click('button[type=submit]')]);

    await t.test('the Tests tab: failures first, message as text, link to the log', async (t) => {
      await page.goto(`${base}/runs/${failedRun}`);
      await Promise.all([page.waitForURL(/\/tests$/), page.click('#tests-tab')]);
      t.match(await page.locator('#test-counts').textContent(), /2 tests: 1 passed, 1 failed/);
      const rows = page.locator('#test-results tbody tr');
      t.equal(await rows.count(), 2);
      t.equal(await rows.nth(0).getAttribute('data-test'), 'ui › wobbles', 'the failure is first');
      t.equal(await rows.nth(0).locator('.test-message').textContent(), 'expected <b>1</b>, got 2', 'markup in a message stays text');
      t.match(await rows.nth(0).locator('a', { hasText: 'log of unit tests' }).getAttribute('href'), /\/logs\?job=unit&step=unit%20tests&find=wobbles$/);
      await Promise.all([page.waitForURL(/\/logs\?/), rows.nth(0).locator('a', { hasText: 'log of unit tests' }).click()]);
      const line = page.locator('#log .ln.hl');
      await line.waitFor({ timeout: 30_000 });
      t.match(await line.textContent(), /not ok 2 - wobbles/, "the log opens at the test's line");
    });

    await t.test('history: sparkline of results and durations; quarantine from the page', async (t) => {
      await page.goto(`${base}/runs/${failedRun}/tests`);
      await Promise.all([page.waitForURL(/\/tests\/history\?/), page.locator('#test-results a', { hasText: 'ui › wobbles' }).click()]);
      const bars = page.locator('#sparkline rect');
      t.equal(await bars.count(), 2);
      t.same(await bars.evaluateAll((rs) => rs.map((r) => [r.getAttribute('data-status'), Number(r.getAttribute('height'))])), [['failed', 36], ['passed', 18]], 'oldest first; height by duration');
      t.equal(await page.locator('#failure-rate').textContent(), '50.0%');
      await page.fill('[data-action="quarantine-add"] input[name="reason"]', 'wobbles on slow machines');
      await Promise.all([page.waitForURL(/\/tests$/), page.click('[data-action="quarantine-add"] button')]);
      const entry = page.locator('#quarantine tbody tr[data-test="ui › wobbles"]');
      t.equal(await entry.getAttribute('data-state'), 'active');
      t.match(await entry.textContent(), /alice, .*wobbles on slow machines/);
    });

    await t.test('the Tests page: the flaky test with both runs; leaving quarantine stays listed', async (t) => {
      await page.goto(`${base}/tests`);
      const flaky = page.locator('#flaky tbody tr[data-test="ui › wobbles"]');
      t.equal(await flaky.count(), 1);
      const links = await flaky.locator('a.mono').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
      t.ok(links.some((h) => h?.endsWith(passedRun)) && links.some((h) => h?.endsWith(failedRun)), 'both runs are the evidence');
      await page.fill('#quarantine [data-action="quarantine-remove"] input[name="reason"]', 'fixed');
      await Promise.all([page.waitForURL(/\/tests$/), page.click('#quarantine [data-action="quarantine-remove"] button')]);
      const entry = page.locator('#quarantine tbody tr[data-test="ui › wobbles"]');
      t.equal(await entry.getAttribute('data-state'), 'removed');
      t.match(await entry.textContent(), /alice, .*: fixed/);
      t.same(errors, [], 'no script errors');
    });
  });
}
