// Done-when of issue 41 (test results) on real agents: `svc dev` (relay, orchestrator and a real
// agent on embedded PostgreSQL, started from bin/svc.ts) serves an example whose job declares
// `testResults` and a retry on failed tests. Its test asks a verdict server on 127.0.0.1 (the
// job's network) whether to fail: the first attempt of a commit fails `demo › wobbly`, so run 1
// fails once and passes on the retry, and the orchestrator marks the test flaky with the run as
// evidence. Quarantined with `svc tests quarantine add`, the next commit's test fails every time,
// yet its job passes on the first attempt (no retry) and the run's Tests tab still shows the
// failure, marked quarantined. test:full only (a whole stack, real waits on a loaded machine).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { runCli } from '../fixtures/cli.ts';
import { git, gitEnv } from '../fixtures/git-repos.ts';
import { exitedWithOutput, REPO_ROOT } from '../fixtures/programs.ts';

t.setTimeout(900_000);

const WORKFLOW = `// A test that may fail: the verdict server says so (first attempt of a commit, or always).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { job, push, workflow } from 'svc/sdk';

export default workflow('flaky', {
  on: push({ branches: ['main'] }),
  jobs: {
    unit: job({
      runsOn: ['local'],
      testResults: 'reports/*.xml',
      retry: { maxAttempts: 2, on: ['failed-tests'], backoff: { delaySeconds: 0 } },
      steps: (s) =>
        s.step('test', async (ctx) => {
          const verdict = await (await fetch(\`\${ctx.env['FLAKY_URL']}/verdict?sha=\${String(ctx.event.sha)}\`)).text();
          const fail = verdict === 'fail';
          await mkdir(join(ctx.repoRoot, 'reports'), { recursive: true });
          const wobbly = fail ? '<testcase name="wobbly" time="0.02"><failure message="timed out waiting for the socket">at demo.test.ts:7</failure></testcase>' : '<testcase name="wobbly" time="0.02"/>';
          await writeFile(join(ctx.repoRoot, 'reports', 'junit.xml'), \`<testsuite name="demo"><testcase name="steady" time="0.01"/>\${wobbly}</testsuite>\`);
          console.log(\`tests \${fail ? 'failed' : 'passed'}\`);
          if (fail) await ctx.$\`node -e \${'process.exit(1)'}\`;
        }),
    }),
  },
});
`;

type DevEvent = Record<string, unknown> & { event: string };

const root = await mkdtemp(join(tmpdir(), 'svc-e2e-flaky-'));
// Verdicts: the first ask per commit fails, later ones pass; a commit in `always` always fails.
const asked = new Map<string, number>();
const always = new Set<string>();
const server = createServer((req, res) => {
  const sha = new URL(req.url ?? '/', 'http://x').searchParams.get('sha') ?? '';
  const n = (asked.get(sha) ?? 0) + 1;
  asked.set(sha, n);
  res.end(always.has(sha) || n === 1 ? 'fail' : 'pass');
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const verdictUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

let dev: ChildProcess | undefined;
t.teardown(async () => {
  if (dev !== undefined && dev.exitCode === null) {
    const exited = exitedWithOutput(dev);
    dev.kill('SIGINT');
    const late = setTimeout(() => dev?.kill('SIGKILL'), 60_000);
    await exited;
    clearTimeout(late);
  }
  server.close();
  await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

const example = join(root, 'example');
await mkdir(join(example, '.svc', 'workflows'), { recursive: true });
await writeFile(join(example, '.svc', 'workflows', 'flaky.ts'), WORKFLOW);
await writeFile(join(example, 'README.md'), 'flaky tests demo\n');

const events: DevEvent[] = [];
let stderr = '';
dev = spawn(process.execPath, [join(REPO_ROOT, 'bin/svc.ts'), 'dev', '--json', '--example', example, '--data-dir', join(root, 'data'), '--port', '0', '--relay-port', '0', '--push'], {
  cwd: root,
  env: { ...gitEnv(), FLAKY_URL: verdictUrl, SVC_AGENT_PASS_ENV: 'default,FLAKY_URL' },
  stdio: ['ignore', 'pipe', 'pipe'],
});
let buffered = '';
dev.stdout!.on('data', (d: Buffer) => {
  buffered += d.toString();
  let nl: number;
  while ((nl = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, nl).trim();
    buffered = buffered.slice(nl + 1);
    if (line !== '') events.push(JSON.parse(line) as DevEvent);
  }
});
dev.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
const waitEvent = async (what: string, match: (e: DevEvent) => boolean, timeoutMs = 400_000): Promise<DevEvent> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = events.find(match);
    if (found !== undefined) return found;
    if (dev!.exitCode !== null) throw new Error(`svc dev exited before ${what}: ${stderr}`);
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; stderr: ${stderr}`);
    await new Promise((r) => setTimeout(r, 250));
  }
};
const terminal = (e: DevEvent) => e.event === 'run' && ['completed', 'failed', 'cancelled'].includes(String(e['status']));

const ready = await waitEvent('ready', (e) => e.event === 'ready');
const envFile = await readFile(String(ready['cliEnvFile']), 'utf8');
const cliEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: join(root, 'cli-home') };
for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG']) cliEnv[name] = new RegExp(`${name}='([^']+)'`).exec(envFile)![1]!;
const svc = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: cliEnv });
const relayUrl = String(ready['relayUrl']);

await t.test('a test that fails once then passes on the retry is marked flaky, with the run as evidence', async (t) => {
  const run = await waitEvent('the first run to end', terminal);
  const runId = String(run['runId']);
  t.equal(run['status'], 'completed', `run ${runId}: ${String(run['reason'] ?? '')}`);
  const sha = String(run['sha']);
  t.equal(asked.get(sha), 2, 'the test ran twice: the attempt and its retry');
  const tests = JSON.parse((await svc(['tests', '--run', runId, '--json'])).stdout).run;
  t.match(tests.counts, { total: 4, passed: 3, failed: 1 }, 'both attempts recorded');
  t.same(tests.steps.map((s: { attempt: number; failedByTests: boolean }) => [s.attempt, s.failedByTests]).sort(), [[1, true], [2, false]]);
  const flaky = await svc(['tests', 'flaky', '--json']);
  t.equal(flaky.code, 0, flaky.stderr);
  const entry = JSON.parse(flaky.stdout).tests.find((f: { name: string }) => f.name === 'wobbly');
  t.match(entry, { suite: 'demo', name: 'wobbly', sha, passedRuns: [runId], failedRuns: [runId] }, 'flaky on this commit: failed and passed in the run');
  console.log(`# run ${runId} on ${sha.slice(0, 12)}: wobbly flaky, evidence passed ${entry.passedRuns} failed ${entry.failedRuns}`);
});

await t.test('quarantined: the next run passes on its first attempt, its Tests tab still shows the failure', async (t) => {
  const added = await svc(['tests', 'quarantine', 'add', 'wobbly', '--suite', 'demo', '--reason', 'flaky: fails once per commit']);
  t.equal(added.code, 0, added.stderr);
  const work = String(ready['repo']);
  await writeFile(join(work, 'NOTES.md'), 'second commit\n');
  await git(work, ['add', 'NOTES.md']);
  await git(work, ['commit', '--quiet', '-m', 'second commit']);
  const sha = (await git(work, ['rev-parse', 'HEAD'])).trim();
  always.add(sha);
  await git(work, ['push', '--quiet', 'svc', 'HEAD']);
  const run = await waitEvent('the second run to end', (e) => terminal(e) && e['sha'] === sha);
  const runId = String(run['runId']);
  t.equal(run['status'], 'completed', `run ${runId}: ${String(run['reason'] ?? '')}`);
  t.equal(asked.get(sha), 1, 'no retry: the failure did not fail the job');
  const tests = JSON.parse((await svc(['tests', '--run', runId, '--json'])).stdout).run;
  t.match(tests.counts, { total: 2, failed: 1, quarantined: 1 });
  t.match(tests.steps[0], { waived: true, failedByTests: true, exitFailure: true }, 'failed by its tests alone, all of them quarantined');
  const pat = cliEnv['SVC_TOKEN']!;
  const page = await fetch(`${relayUrl}/ui/orgs/${cliEnv['SVC_ORG']}/runs/${runId}/tests`, { headers: { authorization: `Bearer ${pat}` } });
  const html = await page.text();
  t.equal(page.status, 200);
  t.match(html, /data-test="demo › wobbly" data-status="failed" class="failing"/, 'the failure is on the Tests tab');
  t.match(html, /s-quarantined/, 'marked quarantined');
  t.match(html, /failed only in quarantined tests: did not fail the job/);
  console.log(`# run ${runId} on ${sha.slice(0, 12)}: completed on attempt 1 with wobbly failed and quarantined`);
});
