// The README's pictures of the dashboard's test pages, made from this repository's OWN test
// results: a clone of HEAD is served by `svc dev` (relay, orchestrator, agent on embedded
// PostgreSQL), each push runs `.svc/workflows/ci.ts` on the agent, and its `unit` job's JUnit
// file (scripts/test-tiers.ts --junit) is recorded as test results (docs/test-results.md). Once
// the unit job of every push has ended, Chromium opens the last run's Tests tab and the history
// page of its first test and saves docs/images/dashboard-tests.png and
// docs/images/dashboard-test-history.png.
//
// The svc dev agent has the labels `local` and `linux`, so the `integration` and `system` jobs
// (labels `linux`, `postgres`) wait for an agent that never comes: each run is cancelled once its
// unit job has ended. The one agent runs a job at a time and every job installs the dependencies
// afresh: a push takes 10 to 25 minutes on 2 cores (typecheck and build go before unit).
//
// Run: node scripts/dashboard-test-shots.ts [--runs N] [--out DIR]   (N pushes, default 2: the history's bars)
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CHROMIUM = '/usr/bin/chromium';
const JOB_LIMIT_MS = 40 * 60_000;
const ENDED = ['completed', 'failed', 'cancelled', 'skipped', 'timed_out'];
const run = promisify(execFile);

const { values } = parseArgs({ options: { runs: { type: 'string', default: '2' }, out: { type: 'string', default: join(ROOT, 'docs/images') } } });
const RUNS = Number(values.runs);
if (!Number.isInteger(RUNS) || RUNS < 1 || RUNS > 10) throw new Error(`--runs ${values.runs}: a whole number from 1 to 10`);

type DevEvent = Record<string, unknown> & { event: string };

const say = (line: string): void => void process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);
const git = async (cwd: string, args: string[]): Promise<string> => (await run('git', args, { cwd, maxBuffer: 64 * 1024 * 1024 })).stdout;

/** svc dev as a child process, its JSON events collected. */
function startDev(repo: string, dataDir: string): { child: ChildProcess; events: DevEvent[]; wait: (what: string, match: (e: DevEvent) => boolean, ms?: number) => Promise<DevEvent> } {
  const child = spawn(process.execPath, [join(ROOT, 'bin/svc.ts'), 'dev', '--json', '--repo', repo, '--data-dir', dataDir, '--port', '0', '--relay-port', '0', '--push'], {
    cwd: repo,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: DevEvent[] = [];
  let stderr = '';
  let buffered = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line === '') continue;
      const event = JSON.parse(line) as DevEvent;
      events.push(event);
      if (event.event === 'job') say(`job ${String(event['job'])}: ${String(event['status'])}`);
      else if (event.event === 'run') say(`run ${String(event['runId'])} ${String(event['workflow'])}: ${String(event['status'])}`);
      else if (event.event === 'error') say(`svc dev: ${String(event['code'])} ${String(event['message'])}`);
    }
  });
  const wait = async (what: string, match: (e: DevEvent) => boolean, ms = JOB_LIMIT_MS): Promise<DevEvent> => {
    const end = Date.now() + ms;
    for (;;) {
      const found = events.find(match);
      if (found !== undefined) return found;
      if (child.exitCode !== null) throw new Error(`svc dev exited before ${what}: ${stderr}`);
      if (Date.now() > end) throw new Error(`no ${what} within ${ms / 1000} s`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  return { child, events, wait };
}

/** Waits for the unit job of a run of `sha` to end, then cancels the run (its postgres jobs cannot start). */
async function unitOf(dev: ReturnType<typeof startDev>, sha: string, api: (path: string, method?: string) => Promise<Response>): Promise<string> {
  const runEvent = await dev.wait(`a run of ${sha.slice(0, 8)}`, (e) => e.event === 'run' && e['sha'] === sha && e['workflow'] === 'svc');
  const runId = String(runEvent['runId']);
  const unit = await dev.wait(`the unit job of ${runId}`, (e) => e.event === 'job' && e['runId'] === runId && e['job'] === 'unit' && ENDED.includes(String(e['status'])));
  say(`unit job of ${runId}: ${String(unit['status'])}${unit['reason'] !== null ? ` (${String(unit['reason'])})` : ''}`);
  const cancelled = await api(`/orgs/dev/runs/${runId}/cancel`, 'POST');
  if (cancelled.status >= 400) throw new Error(`cancel ${runId}: ${cancelled.status} ${await cancelled.text()}`);
  await dev.wait(`run ${runId} to end`, (e) => e.event === 'run' && e['runId'] === runId && ENDED.includes(String(e['status'])), 5 * 60_000);
  return runId;
}

async function screenshots(relayUrl: string, token: string, runId: string): Promise<void> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' })).newPage();
    await page.goto(`${relayUrl}/signin?next=${encodeURIComponent('/ui/orgs/dev/runs')}`);
    await page.fill('#token', token);
    await Promise.all([page.waitForURL(/\/runs$/), page.click('button[type=submit]')]);
    await page.goto(`${relayUrl}/ui/orgs/dev/runs/${runId}/tests`);
    const counts = (await page.locator('#test-counts').textContent()) ?? '';
    say(`Tests tab: ${counts}`);
    await mkdir(values.out, { recursive: true });
    await page.screenshot({ path: join(values.out, 'dashboard-tests.png') });
    // The first test listed (a failure, when there is one) and its history.
    const link = page.locator('#test-results tbody tr a[href*="/tests/history?"]').first();
    await Promise.all([page.waitForURL(/\/tests\/history\?/), link.click()]);
    say(`history: ${page.url()}`);
    await page.screenshot({ path: join(values.out, 'dashboard-test-history.png') });
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const root = await mkdtemp(join(tmpdir(), 'svc-test-shots-'));
  const repo = join(root, 'svc');
  let dev: ReturnType<typeof startDev> | undefined;
  try {
    // A clone of HEAD: svc dev adds a remote to the repository it serves, and the jobs check out commits.
    await git(root, ['clone', '--quiet', '--no-hardlinks', ROOT, repo]);
    await git(repo, ['config', 'user.email', 'shots@svc.invalid']);
    await git(repo, ['config', 'user.name', 'svc test shots']);
    say(`cloned ${(await git(repo, ['rev-parse', 'HEAD'])).trim().slice(0, 12)} to ${repo}`);
    dev = startDev(repo, join(root, 'data'));
    const ready = await dev.wait('ready', (e) => e.event === 'ready', 180_000);
    const relayUrl = String(ready['relayUrl']);
    const token = /SVC_TOKEN='([^']+)'/.exec(await readFile(String(ready['cliEnvFile']), 'utf8'))![1]!;
    const api = (path: string, method = 'GET') => fetch(`${relayUrl}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
    let last = '';
    for (let i = 1; i <= RUNS; i++) {
      const sha = (await git(repo, ['rev-parse', 'HEAD'])).trim();
      if (i > 1) await git(repo, ['push', '--quiet', 'svc', 'HEAD']);
      last = await unitOf(dev, sha, api);
      // The next push: an empty commit, the same tree (the history's next bar).
      if (i < RUNS) await git(repo, ['commit', '--quiet', '--allow-empty', '-m', `test shots: run ${i + 1}`]);
    }
    await screenshots(relayUrl, token, last);
    say(`wrote ${join(values.out, 'dashboard-tests.png')} and ${join(values.out, 'dashboard-test-history.png')}`);
  } finally {
    if (dev !== undefined && dev.child.exitCode === null) {
      const exited = new Promise((r) => dev!.child.once('exit', r));
      dev.child.kill('SIGINT');
      await exited;
    }
    await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  }
}

await main();
