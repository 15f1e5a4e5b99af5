// Issue 42, Done-when 1, in a real browser (Debian's Chromium, playwright-core): a real relay and
// orchestrator linked in-process on real PostgreSQL, a real OpenID Provider (oidc-provider) on
// another site. A person signs in through the provider, sees the held run, cannot approve it (the
// page names the approver role), is put in the release group at the provider (mapped to the
// approver role, and the team the workflow's approval names), signs in again and approves: the run
// is released. An admin's audit page then lists each step with the person's name.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import type { LockWorkflow } from '../../../../schemas/lock.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { SHA_A } from '../../../fixtures/github-payloads.ts';
import { pushHeldRun } from '../../../fixtures/held-runs.ts';
import { job, trig, workflow } from '../../../fixtures/locks.ts';
import { freePort, startTestIdp } from '../../../fixtures/oidc-idp.ts';
import { ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { until } from '../../../fixtures/runs.ts';

const CHROMIUM = '/usr/bin/chromium';

const released: LockWorkflow = {
  ...workflow('ci', [trig.push({ branches: ['main'] })], [job('build')]),
  approval: { clauses: [{ users: [], teams: ['ci-release'], roles: [], count: 1 }], when: 'always', reason: 'production deploy' },
};

if (!existsSync(CHROMIUM) && process.env['CI'] === undefined) {
  t.plan(0, `browser tests need Debian's chromium at ${CHROMIUM} (apt-get install chromium); skipped because CI is not set`);
} else {
  await eachDatabase(t, async (t, db) => {
    const { chromium } = await import('playwright-core');
    const port = await freePort();
    const relayUrl = `http://127.0.0.1:${port}`;
    const idp = await startTestIdp({
      redirectUris: [`${relayUrl}/signin/corp/callback`],
      users: { dana: { name: 'Dana Scully', email: 'dana@example.com', groups: ['ci-viewers'] } },
      issuerHost: 'localhost',
    });
    t.teardown(() => idp.close());
    const dir = await mkdtemp(join(tmpdir(), 'svc-people-audit-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'relay.yaml');
    const provider = { kind: 'oidc', displayName: 'Example Corp', issuer: idp.url, clientId: idp.clientId, clientSecret: idp.clientSecret, prompt: 'consent', scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'] };
    await writeFile(file, stringify({ relay: { sso: { providers: { corp: provider } } } }));
    const stack = await startPlatformStack(t, db, { relayEnv: { SVC_CONFIG_FILE: file, SVC_RELAY_PORT: String(port) } });
    // The org exists only once the stack made it: its group mapping is set as an admin would.
    await stack.relayDb.query(sql.unsafe`
      insert into relay_group_roles (org_id, provider, group_name, role, source)
      values (${ORG}, 'corp', 'ci-viewers', 'viewer', 'admin'), (${ORG}, 'corp', 'ci-release', 'approver', 'admin')`);
    stack.forge.putLock(SHA_A, [released]);
    const { runId } = await pushHeldRun(stack);

    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    t.teardown(() => browser.close());
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(30_000);

    const signIn = async () => {
      await page.goto(`${relayUrl}/ui`);
      await page.waitForURL(/\/signin\?next=/);
      await page.getByRole('link', { name: 'Sign in with Example Corp' }).click();
      await page.waitForURL((url) => url.host.startsWith('localhost:'));
      if ((await page.locator('input[name="login"]').count()) > 0) {
        await page.fill('input[name="login"]', 'dana');
        await page.fill('input[name="password"]', 'any');
        await page.click('button[type="submit"]');
      }
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.waitForURL(`${relayUrl}/ui/orgs/${ORG}/runs`);
    };
    const runPage = async () => {
      await page.goto(`${relayUrl}/ui/orgs/${ORG}/runs/${runId}`);
      return page.locator('main').innerText();
    };
    /** Clicks Approve on the run page; resolves with the relay's answer to the form (its page or JSON). */
    const approve = async () => {
      await runPage();
      const answer = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().endsWith(`/runs/${runId}/approve`));
      await page.getByRole('button', { name: 'Approve' }).click();
      return (await answer).text();
    };

    await t.test('signed in through the provider, the person sees the held run', async (t) => {
      await signIn();
      t.equal(await page.locator('.who span').innerText(), 'dana');
      const text = await until('the held run on the runs page', async () => {
        await page.goto(`${relayUrl}/ui/orgs/${ORG}/runs`);
        const body = await page.locator('main').innerText();
        return body.includes(runId.slice(0, 8)) ? body : undefined;
      }, 20_000, 250);
      t.match(text, /held/);
      t.match(await runPage(), /held/);
    });

    await t.test('the approve is refused, and the page names the role it needs', async (t) => {
      const text = await approve();
      t.match(text, /this needs the approver role in org acme/);
      t.equal((await db.pool.oneFirst(sql.unsafe`select status from runs where id = ${runId}`)) as string, 'held');
    });

    await t.test('in the release group at the provider, signed in again, the person approves: the run is released', async (t) => {
      idp.users.get('dana')!.groups = ['ci-viewers', 'ci-release'];
      await page.goto(`${relayUrl}/ui/orgs/${ORG}/runs`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/signin/);
      await signIn();
      const text = await approve();
      t.notMatch(text, /SVC_ERR_RELAY_ROLE_REQUIRED/);
      t.match(text, /Approval recorded; the run is queued/);
      t.not((await db.pool.oneFirst(sql.unsafe`select status from runs where id = ${runId}`)) as string, 'held', 'released');
    });

    await t.test("an admin's audit page lists each step with the person's name", async (t) => {
      const admin = await (await browser.newContext()).newPage();
      admin.setDefaultTimeout(30_000);
      await admin.goto(`${relayUrl}/signin?next=/ui/orgs/${ORG}/audit`);
      await admin.getByLabel('Personal access token').fill(await stack.pat('root'));
      await admin.getByRole('button', { name: /sign in/i }).click();
      await admin.waitForURL(`${relayUrl}/ui/orgs/${ORG}/audit`);
      const wanted: Array<[string, string]> = [
        ['session.sign_in', 'ok'],
        ['run.approve', 'refused'],
        ['session.sign_out', 'ok'],
        ['run.approve', 'ok'],
      ];
      // The relay's records reach the orchestrator from its outbox: read until they are there.
      const rows = await until('the audit page to list the steps', async () => {
        await admin.goto(`${relayUrl}/ui/orgs/${ORG}/audit?actor=dana`);
        const found = await admin.locator('#audit tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
        const steps = found.reverse().map((cells) => [cells[2]!, cells[4]!.trim()]);
        return wanted.every(([a, o]) => steps.some(([sa, so]) => sa === a && so === o)) && steps.filter(([a]) => a === 'session.sign_in').length >= 2 ? found.reverse() : undefined;
      }, 20_000, 300);
      for (const cells of rows) t.equal(cells[1], 'dana', `${cells[2]} is by dana`);
      const actions = rows.map((c) => `${c[2]} ${c[4]!.trim()}`).reverse();
      t.same(actions.filter((a) => /^(session\.sign_in|session\.sign_out|run\.approve) /.test(a)), ['session.sign_in ok', 'run.approve refused', 'session.sign_out ok', 'session.sign_in ok', 'run.approve ok'], 'in order');
      const refused = rows.find((c) => c[2] === 'run.approve' && c[4]!.trim() === 'refused');
      t.match(refused?.[5], /needs the approver role/);
      // A person without the admin role is refused the page, which names the role.
      await page.goto(`${relayUrl}/ui/orgs/${ORG}/audit`);
      t.match(await page.locator('main').innerText(), /this needs the admin role in org acme/);
    });
  });
}
