// `svc dev` end to end as a real child process: the quickstart example copied into a temporary
// data dir, its first commit pushed, the run finishing green with its step logs (and an identity
// token subject, never the token); a second commit pushed through the `svc` remote runs again;
// SIGINT stops everything with exit 0; a second start resumes with both runs listed. Bad flags
// and repositories are refused with a clear line before anything starts.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { git, gitEnv } from '../fixtures/git-repos.ts';
import { exitedWithOutput, REPO_ROOT, runProgram } from '../fixtures/programs.ts';

t.setTimeout(1_200_000);

const SVC = join(REPO_ROOT, 'bin/svc.ts');
const EXAMPLE = join(REPO_ROOT, 'examples/quickstart');

type DevEvent = Record<string, unknown> & { event: string };

interface DevProcess {
  child: ChildProcess;
  events: DevEvent[];
  stderr: () => string;
  /** Resolves with the first event (from the start) matching, or rejects after timeoutMs. */
  waitFor(what: string, match: (e: DevEvent) => boolean, timeoutMs?: number): Promise<DevEvent>;
  exited: Promise<number | null>;
}

function startDev(args: string[], cwd: string): DevProcess {
  const child = spawn(process.execPath, [SVC, 'dev', '--json', ...args], { cwd, env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  const events: DevEvent[] = [];
  let buffered = '';
  let stderr = '';
  const waiters: Array<() => void> = [];
  child.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim() === '') continue;
      events.push(JSON.parse(line) as DevEvent);
    }
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // Waiters give up once svc dev has exited and its last output has been read.
  const exited = exitedWithOutput(child);
  let finished = false;
  void exited.then(() => {
    finished = true;
    for (const w of waiters.splice(0)) w();
  });
  const waitFor = (what: string, match: (e: DevEvent) => boolean, timeoutMs = 120_000) =>
    new Promise<DevEvent>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}\nevents: ${events.map((e) => JSON.stringify(e)).join('\n')}\nstderr: ${stderr}`)), timeoutMs);
      const check = () => {
        const found = events.find(match);
        if (found) {
          clearTimeout(timer);
          resolve(found);
          return;
        }
        if (finished) {
          clearTimeout(timer);
          reject(new Error(`svc dev exited (${child.exitCode}) before ${what}\nstderr: ${stderr}`));
          return;
        }
        waiters.push(check);
      };
      check();
    });
  return { child, events, stderr: () => stderr, waitFor, exited };
}

const root = await mkdtemp(join(tmpdir(), 'svc-e2e-dev-'));
t.teardown(() => rm(root, { recursive: true, force: true }));
const running: DevProcess[] = [];
t.teardown(async () => {
  for (const p of running) {
    if (p.child.exitCode === null) {
      p.child.kill('SIGKILL');
      await p.exited;
    }
  }
});

const dataDir = join(root, 'data');
const args = ['--example', EXAMPLE, '--data-dir', dataDir, '--port', '0', '--relay-port', '0', '--push'];
const isRun = (workflow: string, status: string) => (e: DevEvent) => e.event === 'run' && e.workflow === workflow && e.status === status;

await t.test('bad input is refused before anything starts', async (t) => {
  const cases: Array<{ args: string[]; code: number; message: RegExp }> = [
    { args: ['--repo', join(root, 'missing')], code: 1, message: /SVC_ERR_DEV_REPO: .*not a directory/ },
    { args: ['--repo', root], code: 1, message: /SVC_ERR_DEV_REPO: .*not inside a git repository/ },
    { args: ['--repo', root, '--example', EXAMPLE], code: 2, message: /either --repo or --example/ },
    { args: ['--example', join(root, 'nothing-here')], code: 1, message: /SVC_ERR_DEV_EXAMPLE: .*no \.svc\/ directory/ },
    { args: ['--example', EXAMPLE, '--port', '70000'], code: 2, message: /--port must be a port number/ },
  ];
  for (const c of cases) {
    const out = await runProgram(SVC, ['dev', ...c.args, '--data-dir', join(root, 'refused')], { cwd: root, env: gitEnv(), timeoutMs: 60_000 });
    t.equal(out.code, c.code, `exit code for ${c.args.join(' ')}`);
    t.match(out.stderr, c.message);
    t.equal(out.stderr.trim().split('\n').length, 1, 'one line');
  }
  // With --json a refusal is one error event on stdout, and only JSON lines there (oclif's own
  // exit error object must not follow it).
  const refused = await runProgram(SVC, ['dev', '--json', '--repo', join(root, 'missing'), '--data-dir', join(root, 'refused')], { cwd: root, env: gitEnv(), timeoutMs: 60_000 });
  t.equal(refused.code, 1, '--json refusal: exit code 1');
  const lines = refused.stdout.trim().split('\n');
  t.same(
    lines.map((line) => (JSON.parse(line) as { event: string; code?: string })).filter((e) => e.event === 'error').map((e) => e.code),
    ['SVC_ERR_DEV_REPO'],
    '--json refusal: every stdout line is a JSON event, one of them the error with its code',
  );
  // A port that is taken.
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const busyPort = (busy.address() as AddressInfo).port;
  try {
    const out = await runProgram(SVC, ['dev', '--example', EXAMPLE, '--port', String(busyPort), '--data-dir', join(root, 'refused')], { cwd: root, env: gitEnv(), timeoutMs: 60_000 });
    t.equal(out.code, 1);
    t.match(out.stderr, new RegExp(`SVC_ERR_DEV_PORT_IN_USE: port ${busyPort} \\(--port\\) is in use`));
  } finally {
    busy.close();
  }
  // A git repository without .svc/.
  const plain = join(root, 'plain');
  await mkdir(plain);
  await git(plain, ['init', '--quiet']);
  const out = await runProgram(SVC, ['dev', '--repo', plain, '--data-dir', join(root, 'refused')], { cwd: root, env: gitEnv(), timeoutMs: 60_000 });
  t.equal(out.code, 1);
  t.match(out.stderr, /SVC_ERR_DEV_NO_WORKFLOWS: .*svc init/);
  t.equal(await stat(join(root, 'refused')).catch(() => null), null, 'nothing was created');
});

let firstRun = '';
let secondRun = '';

await t.test('first start: example copied, first commit pushed, the run finishes green with its logs', async (t) => {
  const dev = startDev(args, root);
  running.push(dev);
  const ready = await dev.waitFor('ready', (e) => e.event === 'ready', 180_000);
  t.match(ready, { remote: { name: 'svc' }, labels: ['local'] });
  t.same(ready['recentRuns'], [], 'no earlier runs on a fresh data dir');
  const push = await dev.waitFor('the first push', (e) => e.event === 'push');
  t.equal(push['ok'], true, String(push['output']));
  const done = await dev.waitFor('ci to finish', (e) => e.event === 'run' && e.workflow === 'ci' && ['completed', 'failed', 'cancelled'].includes(String(e['status'])), 180_000);
  t.equal(done['status'], 'completed', `ci finished: ${JSON.stringify(done)}`);
  firstRun = String(done['runId']);
  const logs = dev.events.filter((e) => e.event === 'log' && e['runId'] === firstRun);
  const text = logs.map((e) => `${String(e['job'])} ${String(e['step'])} ${String(e['text'])}`).join('\n');
  t.match(text, /build version building 0\.1\.0\+/, 'build step log');
  t.match(text, /test \(unit\) check ok greet/, 'matrix instance unit');
  t.match(text, /test \(lint\) check ok greeting\.ts/, 'matrix instance lint');
  t.match(text, /testing build 0\.1\.0\+[0-9a-f]{7}: unit/, 'the build output reached the test job');
  t.match(text, /identity token subject: repo:local\/quickstart-work:ref:refs\/heads\/main:workflow:ci/, 'identity token sub');
  t.notMatch(text, /eyJ[A-Za-z0-9_-]+\.eyJ/, 'the token itself is never printed');
  const jobs = dev.events.filter((e) => e.event === 'job' && e['runId'] === firstRun && e['status'] === 'completed').map((e) => e['job']);
  for (const name of ['build', 'test (unit)', 'test (lint)', 'identity']) t.ok(jobs.includes(name), `job ${name} completed`);

  await t.test('a second commit pushed through the svc remote runs again', async (t) => {
    const work = String(ready['repo']);
    await writeFile(join(work, 'NOTES.md'), 'a second commit\n');
    await git(work, ['add', 'NOTES.md']);
    await git(work, ['commit', '--quiet', '-m', 'second commit']);
    await git(work, ['push', 'svc', 'HEAD']);
    const second = await dev.waitFor('a second ci run to finish', (e) => isRun('ci', 'completed')(e) && e['runId'] !== firstRun, 180_000);
    secondRun = String(second['runId']);
    t.not(secondRun, firstRun);
  });

  await t.test('a job reads the repository root exactly as a local run of the same commit does', async (t) => {
    const work = String(ready['repo']);
    // One line naming every root entry but .git, and the exact bytes of two files (JSON-quoted).
    const workflowText = [
      "import { readdirSync, readFileSync } from 'node:fs';",
      "import { job, push, workflow } from 'svc/sdk';",
      "export default workflow('files', {",
      "  on: push({ branches: ['main'] }),",
      '  jobs: {',
      "    read: job({ runsOn: ['local'], steps: (s) => s.step('root', () => {",
      "      const entries = readdirSync('.').filter((e) => e !== '.git').sort();",
      "      console.log(`root-view ${JSON.stringify({ entries, root: readFileSync('ROOT.txt', 'utf8'), nested: readFileSync('data/nested.txt', 'utf8') })}`);",
      '    }) }),',
      '  },',
      '});',
      '',
    ].join('\n');
    await mkdir(join(work, 'data'), { recursive: true });
    await writeFile(join(work, 'ROOT.txt'), 'first line\n  indented, trailing spaces  \n\tand a tab\n');
    await writeFile(join(work, 'data', 'nested.txt'), 'nested ✓\n');
    await writeFile(join(work, '.svc', 'workflows', 'files.ts'), workflowText);
    const compiled = await runProgram(SVC, ['compile'], { cwd: work, env: gitEnv(), timeoutMs: 120_000 });
    t.equal(compiled.code, 0, compiled.stderr);
    await git(work, ['add', '-A']);
    await git(work, ['commit', '--quiet', '-m', 'files workflow']);
    await git(work, ['push', 'svc', 'HEAD']);
    const done = await dev.waitFor('the files run to finish', (e) => e.event === 'run' && e.workflow === 'files' && ['completed', 'failed', 'cancelled'].includes(String(e['status'])), 180_000);
    t.equal(done['status'], 'completed', JSON.stringify(done));
    const onAgent = dev.events.find((e) => e.event === 'log' && e['runId'] === done['runId'] && String(e['text']).startsWith('root-view '));
    t.ok(onAgent, 'the agent job printed its view');
    const local = await runProgram(SVC, ['run', 'push', '--local'], { cwd: work, env: gitEnv(), timeoutMs: 300_000 });
    const localLine = local.stdout.split('\n').find((l) => l.includes('root-view '));
    t.ok(localLine, `the local job printed its view\n${local.stdout}\n${local.stderr}`);
    const view = (text: string) => JSON.parse(text.slice(text.indexOf('root-view ') + 'root-view '.length)) as { entries: string[]; root: string; nested: string };
    const agentView = view(String(onAgent?.['text']));
    const localView = view(localLine ?? 'root-view {}');
    t.equal(localView.root, agentView.root, 'ROOT.txt: the same bytes');
    t.equal(localView.nested, agentView.nested, 'data/nested.txt: the same bytes');
    t.same(localView.entries, agentView.entries, 'the same root entries');
    t.equal(agentView.root, 'first line\n  indented, trailing spaces  \n\tand a tab\n');
  });

  dev.child.kill('SIGINT');
  t.equal(await dev.exited, 0, 'SIGINT stops svc dev with exit 0');
  t.ok(dev.events.some((e) => e.event === 'stopped'), 'it said it stopped');
  const stopping = dev.events.findIndex((e) => e.event === 'stopping');
  t.same(dev.events.slice(stopping).map((e) => e.event), ['stopping', 'stopped'], 'after stopping, only stopped (the progress was flushed before it)');
  t.equal(dev.stderr(), '', 'nothing on stderr');
});

await t.test('second start resumes: both runs listed, nothing pushed again', async (t) => {
  t.ok(firstRun !== '' && secondRun !== '', 'the first start produced two runs');
  const dev = startDev(args, root);
  running.push(dev);
  const ready = await dev.waitFor('ready again', (e) => e.event === 'ready', 120_000);
  const listed = (ready['recentRuns'] as Array<{ runId: string; status: string }>).map((r) => r.runId);
  t.ok(listed.includes(firstRun), 'first run still listed');
  t.ok(listed.includes(secondRun), 'second run still listed');
  await dev.waitFor('the already-pushed note', (e) => e.event === 'note' && /already on the svc remote/.test(String(e['message'])));
  t.notOk(dev.events.some((e) => e.event === 'push'), 'no push: HEAD is on the remote already');
  const state = JSON.parse(await readFile(join(dataDir, 'dev', 'state.json'), 'utf8')) as { orgId: string; sources: Record<string, string> };
  t.equal(state.orgId, 'dev');
  t.equal(Object.keys(state.sources).length, 1, 'one source, reused');
  dev.child.kill('SIGTERM');
  t.equal(await dev.exited, 0, 'SIGTERM stops it too');
});
