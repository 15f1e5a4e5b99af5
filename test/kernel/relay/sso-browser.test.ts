// Sign-in through an identity provider in a real browser (Debian's Chromium driven by
// playwright-core): a real relay on real PostgreSQL and a real OpenID Provider (oidc-provider) on
// another site (localhost vs 127.0.0.1, so the browser applies its SameSite rules to the relay's
// cookies across the provider's redirect). The person opens the dashboard, is sent to sign in,
// picks the provider, signs in and consents there, lands on the runs page as themself; an approve
// from the dashboard is refused with a page naming the approver role; once the provider puts them
// in the release group and they sign in again, the same approve passes the role check.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { stringify } from 'yaml';
import { eachDatabase } from '../../fixtures/db.ts';
import { freePort, startTestIdp } from '../../fixtures/oidc-idp.ts';
import { newOrg, startTestRelay } from './harness.ts';

const CHROMIUM = '/usr/bin/chromium';

if (!existsSync(CHROMIUM) && process.env['CI'] === undefined) {
  t.plan(0, `browser tests need Debian's chromium at ${CHROMIUM} (apt-get install chromium); skipped because CI is not set`);
} else {
  await eachDatabase(t, async (t, db) => {
    const { chromium } = await import('playwright-core');
    await newOrg(db.pool, 'acme');
    const port = await freePort();
    const relayUrl = `http://127.0.0.1:${port}`;
    const idp = await startTestIdp({
      redirectUris: [`${relayUrl}/signin/corp/callback`],
      users: { erin: { name: 'Erin Example', email: 'erin@example.com', groups: ['ci-viewers'] } },
      issuerHost: 'localhost',
    });
    t.teardown(() => idp.close());
    const dir = await mkdtemp(join(tmpdir(), 'svc-sso-browser-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'relay.yaml');
    await writeFile(
      file,
      stringify({
        relay: {
          sso: {
            providers: {
              corp: {
                kind: 'oidc',
                displayName: 'Example Corp',
                issuer: idp.url,
                clientId: idp.clientId,
                clientSecret: idp.clientSecret,
                prompt: 'consent',
                scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
                groupRoles: { 'ci-viewers': ['acme:viewer'], 'ci-release': ['acme:approver'] },
              },
            },
          },
        },
      }),
    );
    await startTestRelay(t, db.url, { env: { SVC_CONFIG_FILE: file, SVC_RELAY_PORT: String(port) } });

    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
    t.teardown(() => browser.close());
    const page = await (await browser.newContext()).newPage();
    page.setDefaultTimeout(30_000);

    /** From the relay's sign-in page through the provider's login and consent, back to the dashboard. */
    const signIn = async () => {
      await page.getByRole('link', { name: 'Sign in with Example Corp' }).click();
      await page.waitForURL((url) => url.host.startsWith('localhost:'));
      if ((await page.locator('input[name="login"]').count()) > 0) {
        await page.fill('input[name="login"]', 'erin');
        await page.fill('input[name="password"]', 'any');
        await page.click('button[type="submit"]');
      }
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.waitForURL(`${relayUrl}/ui/orgs/acme/runs`).catch(async (error: unknown) => {
        throw new Error(`sign-in ended at ${page.url()}: ${(await page.locator('body').innerText()).slice(0, 500)}`, { cause: error });
      });
    };

    /** Approves a run from the dashboard, as its Approve form does (the session's CSRF token, same origin). */
    const approve = async (runId: string) => {
      const csrf = (await page.locator('body').getAttribute('data-csrf')) ?? '';
      // The page's own form post, built in the page (the dashboard shows Approve only on a held run).
      await page.evaluate(`(() => {
        const form = document.createElement('form');
        form.method = 'post';
        form.action = '/ui/orgs/acme/runs/${runId}/approve';
        const field = document.createElement('input');
        field.type = 'hidden';
        field.name = 'csrf';
        field.value = ${JSON.stringify(csrf)};
        form.append(field);
        document.body.append(form);
        form.submit();
      })()`);
      await page.waitForURL(`${relayUrl}/ui/orgs/acme/runs/${runId}/approve`);
      return page.locator('main').innerText();
    };

    await t.test('sign in through the provider and see the runs', async (t) => {
      await page.goto(`${relayUrl}/ui`);
      await page.waitForURL(/\/signin\?next=/);
      t.ok(await page.getByRole('link', { name: 'Sign in with Example Corp' }).isVisible(), 'the provider is offered');
      t.ok(await page.getByLabel('Personal access token').isVisible(), 'so is the token form');
      await signIn();
      t.equal(await page.locator('.who span').innerText(), 'erin', 'signed in as the person');
      t.match(await page.locator('h1').first().innerText(), /Runs/);
      const cookies = await page.context().cookies(relayUrl);
      const session = cookies.find((c) => c.name === 'svc_session');
      t.match(session, { httpOnly: true, sameSite: 'Strict' }, 'the session cookie survived the cross-site return');
      t.notOk(cookies.some((c) => c.name === 'svc_sso_state'), 'the sign-in state cookie is gone');
    });

    await t.test('approving needs the approver role, and the page says so', async (t) => {
      const text = await approve(randomUUID());
      t.match(text, /this needs the approver role in org acme/);
      t.match(text, /SVC_ERR_RELAY_ROLE_REQUIRED/);
    });

    await t.test('in the release group at the provider, after signing in again, the approve passes the role check', async (t) => {
      idp.users.get('erin')!.groups = ['ci-viewers', 'ci-release'];
      await page.goto(`${relayUrl}/ui/orgs/acme/runs`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(/\/signin/);
      await page.goto(`${relayUrl}/ui`);
      await page.waitForURL(/\/signin\?next=/);
      await signIn();
      const text = await approve(randomUUID());
      t.notMatch(text, /SVC_ERR_RELAY_ROLE_REQUIRED/, 'no role refusal');
      // No orchestrator is connected here: the approve got past the role check to the relaying.
      t.match(text, /orchestrator/i);
    });
  });
}
