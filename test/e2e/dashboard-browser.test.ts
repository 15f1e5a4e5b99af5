// The web dashboard in a real browser (Debian's Chromium driven by playwright-core) against a
// real stack: `svc dev` (relay, orchestrator, agent on embedded PostgreSQL) with an example whose
// workflows flood FLOOD_LINES log lines (100,000 in test:full, 10,000 in npm test), wait for
// approval, and tick slowly. Checked: sign-in with a
// personal access token; a run's logs stream while it runs; Cancel from the page ends it; a held
// run approved from the page runs; Re-run opens the new run and a second one inside the cooldown
// shows the countdown; a push appears in the runs list without a reload; a delivery sent again
// shows as duplicate in the event log (test:full and screenshot runs only: it waits out the relay's
// real one-minute window, which npm test checks in-process with the window's clock moved, in
// test/kernel/relay/dashboard/ui-access.test.ts); the flood's log scrolls to its last line with a
// bounded number of line elements (main-thread long tasks are printed, never asserted); a line
// that looks like markup stays text; the agents page lists the agent; a run's page shows its job
// outputs, its attestation verified (and the bundle downloads) and, after two re-runs, the whole
// chain with itself marked; Re-run failed jobs, refused to a viewer-scoped token, restarts a
// failed run's failed job and its dependent only, the others reused (lineage shown); the WCAG contrast of every text on each main page, light and dark
// (lowest ratio printed per page, each text asserted). Screenshots of the main pages go to
// docs/images/ with SVC_DASHBOARD_SCREENSHOTS=1.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { git, gitEnv } from '../fixtures/git-repos.ts';
import { FULL_VOLUME } from '../fixtures/volume.ts';
import { exitedWithOutput, REPO_ROOT } from '../fixtures/programs.ts';
import { describeSample, measureContrast, type ContrastReport } from './dashboard/contrast.ts';
import { dashboardExample, FLOOD_LINES, MARKUP_LINE, PACKAGE_VERSION } from './dashboard/example.ts';

t.setTimeout(1_200_000);

const CHROMIUM = '/usr/bin/chromium';
// The screenshots refresh docs/images/dashboard-*.png only when asked (SVC_DASHBOARD_SCREENSHOTS=1):
// a plain test run writes them to its temporary directory and leaves the tree clean.
const KEEP_SHOTS = process.env['SVC_DASHBOARD_SCREENSHOTS'] === '1';

if (!existsSync(CHROMIUM) && process.env['CI'] === undefined) {
  t.plan(0, `browser tests need Debian's chromium at ${CHROMIUM} (apt-get install chromium); skipped because CI is not set`);
} else {
  await browserTests();
}

type DevEvent = Record<string, unknown> & { event: string };

async function browserTests(): Promise<void> {
  const TERMINAL = ['completed', 'failed', 'cancelled'];
  t.ok(existsSync(CHROMIUM), `${CHROMIUM} is installed (CI installs Debian's chromium package)`);
  const { chromium } = await import('playwright-core');
  const root = await mkdtemp(join(tmpdir(), 'svc-e2e-dashboard-'));
  // One teardown, in order: the browser, then svc dev, then the directory they wrote into
  // (removed while svc dev still ran, it could gain files during the removal on a loaded machine).
  // svc dev is stopped once, as a user stops it: one SIGINT, then waiting for its exit (SIGKILL only
  // if it has not exited in 60 s). The test's last step and the teardown share that one stop: a
  // root teardown makes tap end the root test once idle, which ran the teardown while the last step
  // still waited, and its second signal was svc dev's "stop now, without a clean stop".
  let dev: ChildProcess | undefined;
  let closeBrowser: (() => Promise<void>) | undefined;
  let devStopped: Promise<void> | undefined;
  const stopDev = (): Promise<void> => {
    devStopped ??= (async () => {
      const running = dev;
      if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
      const exited = exitedWithOutput(running);
      running.kill('SIGINT');
      const late = setTimeout(() => running.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(late);
    })();
    return devStopped;
  };
  t.teardown(async () => {
    await closeBrowser?.().catch(() => undefined);
    await stopDev();
    await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  });
  const example = await dashboardExample(join(root, 'example'));

  // svc dev, its JSON events collected.
  const events: DevEvent[] = [];
  let stderr = '';
  const child: ChildProcess = spawn(process.execPath, [join(REPO_ROOT, 'bin/svc.ts'), 'dev', '--json', '--example', example, '--data-dir', join(root, 'data'), '--port', '0', '--relay-port', '0', '--push'], {
    cwd: root,
    env: gitEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buffered = '';
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line === '') continue;
      events.push(JSON.parse(line) as DevEvent);
    }
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  dev = child;
  const waitEvent = async (what: string, match: (e: DevEvent) => boolean, timeoutMs = 240_000): Promise<DevEvent> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = events.find(match);
      if (found !== undefined) return found;
      if (child.exitCode !== null) throw new Error(`svc dev exited before ${what}: ${stderr}`);
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; stderr: ${stderr}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const ready = await waitEvent('ready', (e) => e.event === 'ready');
  const relayUrl = String(ready['relayUrl']);
  const envFile = await readFile(String(ready['cliEnvFile']), 'utf8');
  const pat = /SVC_TOKEN='([^']+)'/.exec(envFile)![1]!;
  const runOf = async (workflow: string) => String((await waitEvent(`a ${workflow} run`, (e) => e.event === 'run' && e['workflow'] === workflow))['runId']);

  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  closeBrowser = () => browser.close();
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => {
    // The re-run cooldown's 429 is expected (the page shows it); anything else is an error.
    if (m.type() === 'error' && !/status of 429/.test(m.text())) pageErrors.push(m.text());
  });
  const SHOTS = KEEP_SHOTS ? join(REPO_ROOT, 'docs/images') : join(root, 'shots');
  await mkdir(SHOTS, { recursive: true });
  const shot = (name: string, fullPage = false) => page.screenshot({ path: join(SHOTS, `dashboard-${name}.png`), fullPage });
  const runs = `${relayUrl}/ui/orgs/dev/runs`;
  // Pages the contrast check visits again at the end.
  let floodRunId = '';
  let chainRunId = '';

  await t.test('sign in with a personal access token', async (t) => {
    await page.goto(`${relayUrl}/`);
    t.match(page.url(), /\/signin\?next=/, 'the relay sends a browser without a session to sign in');
    await shot('signin');
    await page.fill('#token', pat);
    await Promise.all([page.waitForURL(/\/ui\/orgs\/dev\/runs$/), page.click('button[type=submit]')]);
    t.equal(await page.locator('h1').textContent(), 'Runs');
    const cookies = await context.cookies();
    t.ok(cookies.some((c) => c.httpOnly && c.sameSite === 'Strict'), 'an HttpOnly SameSite=Strict session cookie');
    t.notOk((await page.content()).includes(pat), 'the token is not in the page');
  });

  await t.test('a running run streams its log live; Cancel ends it', async (t) => {
    const runId = await runOf('slow');
    await page.goto(`${runs}/${runId}/logs`);
    await page.locator('.ln .tx', { hasText: /^tick 1$/ }).waitFor({ timeout: 240_000 });
    const navigations = await page.evaluate<number>("performance.getEntriesByType('navigation').length");
    await page.locator('.ln .tx', { hasText: /^tick 3$/ }).waitFor({ timeout: 60_000 });
    t.pass('tick 3 arrived after tick 1 on the same page');
    t.equal(await page.evaluate<number>("performance.getEntriesByType('navigation').length"), navigations, 'no reload');
    t.equal(await page.locator('#log-status .status').textContent(), 'running', 'the status badge follows the run');
    await page.goto(`${runs}/${runId}`);
    await page.click('form[data-action=cancel] button');
    await page.locator('#run-detail[data-status=cancelled]').waitFor({ timeout: 60_000 });
    t.pass('the run page shows the run cancelled');
  });

  await t.test('a held run is approved from its page and then runs', async (t) => {
    const runId = await runOf('held');
    await page.goto(`${runs}/${runId}`);
    t.equal(await page.locator('#run-detail').getAttribute('data-status'), 'held');
    await shot('held');
    await page.fill('#comment', 'looks good');
    await page.click('form[data-action=approve] button');
    await page.locator('#run-detail[data-status=completed]').waitFor({ timeout: 240_000 });
    t.pass('approved, it ran to completion');
  });

  await t.test(`the ${FLOOD_LINES.toLocaleString('en')}-line log opens and scrolls to its last line`, async (t) => {
    const runId = await runOf('flood');
    floodRunId = runId;
    await waitEvent('flood to finish', (e) => e.event === 'run' && e['runId'] === runId && e['status'] === 'completed', 300_000);
    // Main-thread tasks over 50 ms, recorded in the page from its first script on.
    await page.addInitScript(`window.longTasks = [];
      new PerformanceObserver((list) => { for (const e of list.getEntries()) window.longTasks.push(Math.round(e.duration)); })
        .observe({ type: 'longtask', buffered: true });`);
    await page.goto(`${runs}/${runId}/logs`);
    await page.locator('#log[data-done=yes]').waitFor({ timeout: 240_000 });
    const total = Number(await page.locator('#log').getAttribute('data-lines'));
    t.ok(total >= FLOOD_LINES, `${total} lines loaded`);
    await page.evaluate("{ const box = document.getElementById('log'); box.scrollTop = box.scrollHeight; }");
    await page.locator(`.ln[data-line="${total}"]`).waitFor({ timeout: 30_000 });
    t.pass('the last line is in view');
    const inDom = await page.locator('.ln').count();
    t.ok(inDom > 0 && inDom <= 200, `the DOM holds ${inDom} line elements, not ${total}`);
    // Scroll through the middle too, as a person would.
    for (const fraction of [0.25, 0.5, 0.75]) {
      await page.evaluate(`{ const box = document.getElementById('log'); box.scrollTop = box.scrollHeight * ${fraction}; }`);
      await page.waitForTimeout(100);
    }
    const long = await page.evaluate<number[]>('window.longTasks');
    await shot('logs');
    const longest = long.length === 0 ? 0 : Math.max(...long);
    const summed = long.reduce((a, b) => a + b, 0);
    t.comment(
      `main-thread long tasks (over 50 ms) while loading and scrolling ${total} lines: ${long.length} task(s), longest ${longest} ms, ${summed} ms in all${long.length === 0 ? '' : `: ${long.slice(0, 20).map((d) => `${d} ms`).join(', ')}${long.length > 20 ? ', …' : ''}`} (target: none over 200 ms)`,
    );
    // Colours are classes; markup in a line stays text.
    t.ok((await page.locator('.ln .a-f2').count()) > 0, 'SGR green became a class');
    // The flood's last-but-one line: far from the first screen, so the search has to scroll there.
    const sought = `line ${FLOOD_LINES - 1} `;
    await page.fill('#log-search', sought);
    const found = page.locator('.ln.hl', { hasText: `${sought}red bold` });
    await found.waitFor({ timeout: 30_000 });
    const foundAt = Number(await found.getAttribute('data-line'));
    t.pass(`search found the line (${foundAt}) and scrolled to it`);
    await page.fill('#log-search', 'not markup');
    const markup = page.locator('.ln.hl .tx');
    await markup.filter({ hasText: 'not markup' }).waitFor({ timeout: 30_000 });
    t.equal(await markup.textContent(), MARKUP_LINE, 'the markup-like line is shown as its text');
    t.equal(await page.locator('#log img').count(), 0, 'no element came from a log line');
    t.not(await page.title(), 'pwned', 'and nothing in it ran');
    // A line's own link (#L<n>) opens the log at that line, highlighted.
    await page.goto(`${runs}/${runId}/logs#L${foundAt}`);
    await page.locator(`.ln.hl[data-line="${foundAt}"]`).waitFor({ timeout: 240_000 });
    t.match(await page.locator(`.ln.hl[data-line="${foundAt}"] .tx`).textContent(), new RegExp(`${sought}red bold`), `#L${foundAt} opens at that line`);
  });

  await t.test("log search: the header's box finds a line of the flood", async (t) => {
    const sought = `line ${FLOOD_LINES - 1} `;
    await page.goto(runs);
    await page.fill('header .log-search-box input[name=q]', sought.trim());
    await page.press('header .log-search-box input[name=q]', 'Enter');
    const hit = page.locator('#log-search-results .log-hit', { hasText: `${sought}red bold` }).first();
    await hit.waitFor({ timeout: 60_000 });
    t.equal(await hit.getAttribute('data-run'), floodRunId, 'the line of the flood run, its colours stripped');
  });

  await t.test('re-run opens the new run; a second one inside the cooldown counts down', async (t) => {
    const runId = await runOf('ci');
    await waitEvent('ci to finish', (e) => e.event === 'run' && e['runId'] === runId && ['completed', 'failed'].includes(String(e['status'])), 300_000);
    await page.goto(`${runs}/${runId}`);
    await Promise.all([page.waitForURL((u) => !u.pathname.endsWith(runId) && /\/runs\/[0-9a-f-]{36}$/.test(u.pathname)), page.click('form[data-action=rerun] button')]);
    t.pass(`re-run opened ${page.url()}`);
    await page.goto(`${runs}/${runId}`);
    await page.click('form[data-action=rerun] button');
    await page.locator('#flash.error').waitFor({ timeout: 30_000 });
    t.match(await page.locator('#flash').textContent(), /SVC_ERR|wait|cooldown|again/i, 'the refusal is shown');
    t.match(await page.locator('form[data-action=rerun] button').textContent(), /\(\d+s\)/, 'the button counts the cooldown down');
    t.ok(await page.locator('form[data-action=rerun] button').isDisabled(), 'and is disabled meanwhile');
  });

  await t.test('run detail: job outputs, a verified attestation and its bundle, the whole re-run chain', async (t) => {
    const first = await runOf('package');
    const settled = (id: string) => waitEvent(`run ${id} to finish`, (e) => e.event === 'run' && e['runId'] === id && ['completed', 'failed'].includes(String(e['status'])), 300_000);
    await settled(first);
    await page.goto(`${runs}/${first}`);
    t.equal(await page.locator('#run-detail').getAttribute('data-status'), 'completed', 'the package run completed');
    t.match(await page.locator('dl.outputs').textContent(), new RegExp(`version\\s*${PACKAGE_VERSION.replaceAll('.', '\\.')}`), 'its job outputs are shown');
    const row = page.locator('#attestations tr[data-attestation]');
    t.equal(await row.count(), 1, 'one attestation');
    t.equal(await row.getAttribute('data-badge'), 'verified', 'verified against the orchestrator keys');
    t.match(await row.textContent(), /dist\/app\.tgz.*verified/s);
    const href = (await row.locator('a[download]').getAttribute('href'))!;
    const bundle = await page.request.get(relayUrl + href);
    t.equal(bundle.status(), 200, 'the bundle downloads with the session');
    t.match(bundle.headers()['content-disposition'], /filename="app\.tgz\.svc\.json"/);
    t.match(await bundle.json(), { mediaType: 'application/vnd.svc.attestation.v1+json', dsseEnvelope: { payloadType: 'application/vnd.in-toto+json' } });
    // Two re-runs, each from the page of the run before: original → re-run → re-run.
    const rerunFrom = async (id: string): Promise<string> => {
      await Promise.all([page.waitForURL((u) => /\/runs\/[0-9a-f-]{36}$/.test(u.pathname) && !u.pathname.endsWith(id)), page.click('form[data-action=rerun] button')]);
      const next = new URL(page.url()).pathname.split('/').pop()!;
      await settled(next);
      // The page refreshes itself until the run is over.
      await page.locator('#run-detail[data-terminal=yes]').waitFor({ timeout: 60_000 });
      return next;
    };
    const second = await rerunFrom(first);
    await page.waitForTimeout(6_000); // the re-run cooldown of the original (5 s)
    const third = await rerunFrom(second);
    chainRunId = third;
    const chain = page.locator('ol.lineage > li');
    t.same(await chain.evaluateAll((items) => items.map((i) => i.getAttribute('data-run'))), [first, second, third], 'the whole chain, oldest first');
    t.equal(await page.locator('ol.lineage > li.current').getAttribute('data-run'), third, 'this run is marked');
    t.equal(await page.locator('ol.lineage [aria-current=page]').count(), 1);
    t.equal(await page.locator('ol.lineage a').count(), 2, 'the other two are links');
    await shot('run', true);
  });

  await t.test('the run page: the needs graph (a → b, a → c, b and c → d) and the timeline in milliseconds', async (t) => {
    const id = await runOf('diamond');
    await waitEvent(`run ${id} to finish`, (e) => e.event === 'run' && e['runId'] === id && TERMINAL.includes(String(e['status'])), 300_000);
    await page.goto(`${runs}/${id}`);
    await page.locator('#run-detail[data-terminal=yes]').waitFor({ timeout: 60_000 });
    // The graph: one node per job, one edge per need, drawn left to right by depth.
    const nodes = page.locator('#needs-graph a.dag-node');
    t.same((await nodes.evaluateAll((els) => els.map((e) => [e.getAttribute('data-job'), e.getAttribute('data-status')]))).sort(), [['a', 'completed'], ['b', 'completed'], ['c', 'completed'], ['d', 'completed']], 'four nodes, each completed');
    const edges = await page.locator('#needs-graph path.dag-edge').evaluateAll((els) => els.map((e) => `${e.getAttribute('data-from')}→${e.getAttribute('data-to')}`).sort());
    t.same(edges, ['a→b', 'a→c', 'b→d', 'c→d'], 'an edge per need');
    const x = Object.fromEntries(await page.locator('#needs-graph a.dag-node rect').evaluateAll((els) => els.map((e) => [e.parentElement!.getAttribute('data-job'), Math.round(e.getBoundingClientRect().x)])));
    t.ok(x['a'] < x['b'] && x['b'] === x['c'] && x['c'] < x['d'], `columns by depth (${JSON.stringify(x)})`);
    // The timeline: one table per job, rows with their durations in ms, matching the API's answer.
    const answer = await page.request.get(`${relayUrl}/v1/orgs/dev/runs/${id}/timeline`, { headers: { authorization: `Bearer ${pat}` } });
    t.equal(answer.status(), 200, 'the timeline API answers');
    const timeline = (await answer.json()).timeline as { queueMs: number; jobs: Array<{ displayName: string; rows: Array<{ kind: string; name: string; durationMs: number }> }> };
    const tables = page.locator('#timeline table.timeline');
    // Jobs in the order they started, as the API gives them.
    const names = await tables.evaluateAll((els) => els.map((e) => e.getAttribute('data-job-name')));
    t.same([...names].sort(), ['a', 'b', 'c', 'd'], 'a timeline per job');
    t.same(names, timeline.jobs.map((j) => j.displayName), 'in the order of the answer');
    const shown = await tables.evaluateAll((els) =>
      els.map((table) => [...table.querySelectorAll('tbody tr')].map((tr) => [tr.getAttribute('data-kind'), tr.getAttribute('data-name'), tr.querySelector('th')!.textContent!.trim(), tr.querySelector('.tl-ms')!.textContent!.trim(), tr.querySelector('svg title')?.textContent ?? ''])),
    );
    const ms = (n: number) => `${Math.round(n).toLocaleString('en-US')} ms`;
    t.same(
      shown.map((rows) => rows.map(([kind, name, , label]) => [kind, name, label])),
      timeline.jobs.map((j) => j.rows.map((r) => [r.kind, r.name, ms(r.durationMs)])),
      'each row as the API gives it, its duration in ms',
    );
    const d = shown[names.indexOf('d')]!;
    const kinds = new Set(d.map(([kind]) => kind));
    t.ok(['waiting', 'queued', 'dispatched', 'phase', 'step'].every((k) => kinds.has(k)), `d waited, queued, was dispatched, set up and ran (${[...kinds].join(', ')})`);
    t.match(d.find(([kind]) => kind === 'waiting')?.[2], /^waiting for b, c$/, 'd waited for b and c');
    const labels = d.map(([, , label]) => label);
    t.ok(labels.includes('source restore') && labels.includes('dependencies'), `the agent's set-up phases (${labels.join('; ')})`);
    t.ok(labels.some((l) => /^step publish/.test(l)), 'the step');
    t.ok(shown.flat().every(([, , , label, title]) => /^\d{1,3}(,\d{3})* ms/.test(label!) && / ms/.test(title!)), 'every duration and bar tooltip in ms');
    const build = timeline.jobs.find((j) => j.displayName === 'a')!.rows.find((r) => r.kind === 'step' && r.name === 'build')!;
    t.ok(build.durationMs >= 300, `a's build step lasted its 300 ms pause (${build.durationMs} ms)`);
    t.match(await page.locator('#timeline-summary').textContent(), new RegExp(`Queued ${ms(timeline.queueMs)}`), 'the run’s queue time in ms');
    await page.evaluate("document.getElementById('needs-graph').scrollIntoView()");
    await shot('timeline');
    await page.goto(runs);
    t.match(await page.locator(`tr[data-run="${id}"] td.queued`).textContent(), /^\d+(\.\d)?m?s$|^\d+m \d\ds$/, 'the runs list shows its queue time');
  });

  await t.test('Re-run failed jobs: a viewer is refused; a developer restarts only the failed job and its dependent', async (t) => {
    const first = await runOf('restart');
    await waitEvent(`run ${first} to fail`, (e) => e.event === 'run' && e['runId'] === first && TERMINAL.includes(String(e['status'])), 300_000);
    const jobOf = (name: string) => page.locator('section.job', { has: page.locator('h3', { hasText: new RegExp(`^${name} `) }) });
    await page.goto(`${runs}/${first}`);
    t.equal(await page.locator('#run-detail').getAttribute('data-status'), 'failed', 'the first run failed');
    t.match(await jobOf('flaky').locator('h3').textContent(), /failed/, 'in its flaky job');
    t.match(await jobOf('after').locator('h3').textContent(), /skipped/, 'and skipped what needs it');
    const prepared = /value\s*(prepared-\w+)/.exec((await jobOf('prepare').locator('dl.outputs').textContent()) ?? '')?.[1];
    t.ok(prepared, `prepare output ${prepared}`);

    // A token narrowed to viewer (docs/roles.md) signs in a second browser: the button's post is refused.
    const minted = await fetch(`${relayUrl}/v1/pats`, { method: 'POST', headers: { authorization: `Bearer ${pat}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'wall screen', scopes: ['viewer'] }) });
    t.equal(minted.status, 201, 'a viewer token was minted');
    const viewerToken = ((await minted.json()) as { token: string }).token;
    const viewerContext = await browser.newContext();
    const viewer = await viewerContext.newPage();
    await viewer.goto(`${relayUrl}/signin?next=${encodeURIComponent(`/ui/orgs/dev/runs/${first}`)}`);
    await viewer.fill('#token', viewerToken);
    await Promise.all([viewer.waitForURL((u) => u.pathname.endsWith(first)), viewer.click('button[type=submit]')]);
    await viewer.click('form[data-action=rerun-failed] button');
    await viewer.locator('#flash.error').waitFor({ timeout: 30_000 });
    t.match(await viewer.locator('#flash').textContent(), /developer role.*SVC_ERR_RELAY_ROLE_REQUIRED/, 'the viewer is refused, and told which role it needs');
    t.ok(viewer.url().endsWith(first), 'and stays on the failed run');
    await viewerContext.close();

    await Promise.all([page.waitForURL((u) => /\/runs\/[0-9a-f-]{36}$/.test(u.pathname) && !u.pathname.endsWith(first)), page.click('form[data-action=rerun-failed] button')]);
    const second = new URL(page.url()).pathname.split('/').pop()!;
    await waitEvent(`run ${second} to finish`, (e) => e.event === 'run' && e['runId'] === second && TERMINAL.includes(String(e['status'])), 300_000);
    await page.locator('#run-detail[data-terminal=yes]').waitFor({ timeout: 60_000 });
    t.equal(await page.locator('#run-detail').getAttribute('data-status'), 'completed', 'the restart completed');
    t.same(await page.locator('ol.lineage > li').evaluateAll((items) => items.map((i) => i.getAttribute('data-run'))), [first, second], 'its lineage: the failed run, then this one (the viewer made none)');
    t.match(await page.locator('ol.lineage > li.current').textContent(), /re-run by developer/, 'a re-run by the developer');
    const agentId = String(ready['agentId']);
    for (const name of ['flaky', 'after']) {
      const job = jobOf(name);
      t.match(await job.locator('h3').textContent(), /completed/, `${name} ran again and completed`);
      t.match(await job.locator('p.sub').first().textContent(), new RegExp(`agent ${agentId}`), `${name} ran on the agent`);
    }
    for (const name of ['prepare', 'other']) {
      const job = jobOf(name);
      t.match(await job.locator('p.sub').first().textContent(), new RegExp(`agent —.*Reused from run ${first}, where it completed`, 's'), `${name} was reused, not run`);
    }
    t.match(await jobOf('after').locator('dl.outputs').textContent(), new RegExp(`saw\\s*${prepared}`), "after read the reused prepare's outputs");
  });

  await t.test('a push appears in the runs list without a reload', async (t) => {
    await page.goto(runs);
    await page.evaluate("window.marker = 'same page'");
    const work = String(ready['repo']);
    await writeFile(join(work, 'NOTES.md'), 'dashboard e2e\n');
    await git(work, ['add', 'NOTES.md']);
    await git(work, ['commit', '--quiet', '-m', 'dashboard e2e push']);
    const sha = (await git(work, ['rev-parse', 'HEAD'])).trim();
    await git(work, ['push', '--quiet', 'svc', 'HEAD']);
    const run = await waitEvent('a run of the new commit', (e) => e.event === 'run' && e['sha'] === sha && e['workflow'] === 'ci');
    await page.locator(`tr[data-run="${String(run['runId'])}"]`).waitFor({ timeout: 60_000 });
    t.equal(await page.evaluate<string>('window.marker'), 'same page', 'the row arrived without a reload');
    await shot('runs');
  });

  const waitOutWindow = FULL_VOLUME || KEEP_SHOTS ? false : 'waits out the relay\'s real one-minute window: test:full (npm test checks it in ui-access.test.ts)';
  await t.test('the event log shows a delivery sent again as duplicate', { skip: waitOutWindow }, async (t) => {
    // The relay itself drops a repeat inside its one-minute window; past it, the orchestrator
    // records the repeat on the delivery's one record.
    const bare = (ready['remote'] as { url: string }).url;
    const config = async (key: string) => (await git(bare, ['config', '--get', key]).catch(() => '')).trim();
    const secretFile = await config('svc.secretFile');
    const secret = secretFile !== '' ? (await readFile(secretFile, 'utf8')).trim() : await config('svc.secret');
    const first = events.find((e) => e.event === 'run' && e['workflow'] === 'ci')!;
    await page.goto(`${runs}/${String(first['runId'])}`);
    const deliveryId = (await page.locator('dt:text-is("Delivery") + dd').textContent())!.trim();
    await page.goto(`${relayUrl}/ui/orgs/dev/events/${encodeURIComponent(deliveryId)}/payload`);
    const body = Buffer.from((await page.locator('pre.payload').textContent())!);
    const headers = {
      'content-type': 'application/json',
      'x-provider-event': 'push',
      'x-provider-delivery': deliveryId,
      'x-provider-hook-installation-target-id': await config('svc.sourceId'),
      'x-provider-hook-installation-target-type': 'integration',
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    };
    const webhookUrl = await config('svc.webhookUrl');
    const row = page.locator(`li.delivery[data-delivery="${deliveryId}"]`);
    // Sent again until the orchestrator has seen it (while the relay's window still holds the id,
    // the relay answers `duplicate` itself and nothing reaches the event log).
    const end = Date.now() + 150_000;
    for (;;) {
      const res = await fetch(webhookUrl, { method: 'POST', headers, body });
      t.equal(res.status, 200, `the repeat was answered: ${await res.text()}`);
      await page.goto(`${relayUrl}/ui/orgs/dev/events`);
      if ((await row.locator('.s-duplicate').count()) > 0 || Date.now() > end) break;
      await page.waitForTimeout(5_000);
    }
    t.match(await row.locator('summary').textContent(), /duplicate ×\d+/, 'the delivery shows as duplicate');
    await row.locator('summary').click();
    t.ok((await row.locator('.pipeline li').count()) > 0, 'its pipeline steps are listed');
    await shot('events');
  });

  await t.test('the agents page lists the agent online with its labels, and the signing keys', async (t) => {
    await page.goto(`${relayUrl}/ui/orgs/dev/agents`);
    const agent = page.locator(`tr[data-agent="${String(ready['agentId'])}"]`);
    t.match(await agent.textContent(), /online.*local/s, 'the svc dev agent is online with its labels');
    t.ok((await page.locator('#signing-keys tbody tr').count()) >= 1, 'the identity signing key is listed');
    await shot('agents');
  });

  await t.test('contrast: every text on each main page, light and dark (WCAG 4.5:1, large 3:1)', async (t) => {
    const report = (scheme: string, name: string, r: ContrastReport) => {
      t.comment(`contrast ${scheme} ${name}: lowest ${describeSample(r.lowest)} among ${r.count} texts`);
      t.same(r.failures.map(describeSample), [], `${scheme} ${name}: no text under its minimum`);
    };
    const main: Record<string, string> = {
      runs,
      run: `${runs}/${chainRunId}`,
      logs: `${runs}/${floodRunId}/logs`,
      events: `${relayUrl}/ui/orgs/dev/events`,
      agents: `${relayUrl}/ui/orgs/dev/agents`,
    };
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const [name, url] of Object.entries(main)) {
        await page.goto(url);
        if (name === 'logs') await page.locator('#log[data-done=yes]').waitFor({ timeout: 240_000 });
        report(scheme, name, await measureContrast(page));
      }
      // The sign-in page, as a browser without a session sees it.
      const fresh = await browser.newContext({ colorScheme: scheme });
      const anonymous = await fresh.newPage();
      await anonymous.goto(`${relayUrl}/`);
      report(scheme, 'sign-in', await measureContrast(anonymous));
      await fresh.close();
    }
    await page.emulateMedia({ colorScheme: null });
  });

  await t.test('phone width: the runs list reflows and stays usable', async (t) => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(runs);
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    t.ok(overflow <= 1, `no page-wide horizontal scroll at 390 px (${overflow})`);
    await page.keyboard.press('Tab');
    t.equal(await page.evaluate<string>('document.activeElement.textContent'), 'Skip to content', 'the first Tab reaches the skip link');
    await shot('phone');
  });

  t.same(pageErrors, [], 'no script errors in the pages');
  // A subtest: with a teardown registered, tap ends the root test as soon as it is idle, so a
  // bare assertion after an await would come after its end.
  await t.test('svc dev stops cleanly on one SIGINT', async (t) => {
    await stopDev();
    t.equal(child.exitCode, 0, `exit code 0; stderr: ${stderr}`);
    t.same(events.slice(-2).map((e) => e.event), ['stopping', 'stopped'], 'its last events are stopping and stopped');
  });
}
