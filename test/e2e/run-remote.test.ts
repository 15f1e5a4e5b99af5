// `svc run remote` end to end on REAL processes (relay, orchestrator, agent, PostgreSQL, git):
// a committed workflow and fixtures, then uncommitted changes in the clone — a changed workflow,
// a modified, a deleted, a new and a .svcignore'd file, local secrets — run through
// `svc run remote <fixture>` on a real agent. The step output shows the uncommitted workflow ran
// on HEAD plus the overlay; the stored overlay is sealed (no plaintext of it in storage); the run
// is a test run (`source_origin = 'run-remote'`, ctx.isTestRun). Then the flags: --all
// --parallel --junit (valid JUnit XML), --no-wait, --json, listing, usage errors, a workflow added
// without `svc compile` (--workflow), and a fixture whose secrets map to a non-test context is
// refused.
import { readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t from 'tap';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { FilesystemStorage } from '../../plugins/storage/filesystem/index.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { gitEnv } from '../fixtures/git-repos.ts';
import { ORG, startJobsStack } from '../fixtures/jobs-stack.ts';
import { REPO_ROOT, runProgram } from '../fixtures/programs.ts';

t.setTimeout(2_400_000);

const workflow = (marker: string) => `import { job, push, workflow } from 'svc/sdk';
import { existsSync, readFileSync } from 'node:fs';
const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8').trim() : 'absent');
export default workflow('ci', {
  on: push({ branches: ['main'] }),
  jobs: {
    check: job({
      runsOn: 'e2e',
      steps: (s) => s.step('show', async (ctx) => {
        console.log('MARKER ${marker}');
        console.log('DATA ' + read('data.txt'));
        console.log('GONE ' + read('gone.txt'));
        console.log('IGNORED ' + read('ignored.txt'));
        console.log('NEW ' + read('new.txt'));
        console.log('TESTRUN ' + String(ctx.isTestRun));
        const key = ctx.secrets.get('API_KEY');
        console.log('SECRET length=' + (key === undefined ? 'none' : String(key.length)));
      }),
    }),
  },
});
`;

const FIXTURES = `import { fixture, push } from 'svc/sdk';
export default fixture('ci-push', { event: push(), branch: 'main', repo: 'acme/app' });
export const second = fixture('second-push', async () => ({ event: push(), branch: 'main', repo: 'acme/app' }));
`;

const DENIED = `import { fixture, push } from 'svc/sdk';
export default fixture('denied', { event: push(), branch: 'main', repo: 'acme/app', secrets: { deploy: 'prod' } });
`;

await eachDatabase(t, async (t, db) => {
  const stack = await startJobsStack(t, db);
  await stack.startAgent({ SVC_AGENT_ID: 'remote-a1' });
  const work = stack.remote.work;
  const sha = await stack.pushWorkflow({
    '.svc/workflows/ci.ts': workflow('committed'),
    '.svc/tests/ci.ts': FIXTURES,
    '.gitignore': '.svc/.secrets\n',
    '.svcignore': 'ignored.txt\n',
    'data.txt': 'committed data\n',
    'gone.txt': 'to be deleted\n',
  }, 'ci and fixtures');
  const pushed = await stack.waitForRun(sha, 240_000);
  t.equal(pushed.status, 'completed', 'the pushed commit ran (the repository and its source are known)');

  const pat = await stack.relayAdmin(['relay', 'pat', 'create', ORG, '--user', 'alice', '--json']);
  t.equal(pat.code, 0, pat.stderr);
  const login = await stack.svc(['login', '--token', (JSON.parse(pat.stdout) as { token: string }).token, '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);
  const env: NodeJS.ProcessEnv = { ...gitEnv(), XDG_CONFIG_HOME: join(stack.root, 'svc-config') };
  for (const k of Object.keys(env)) if (k.startsWith('SVC_')) delete env[k];
  const svc = (args: string[], timeoutMs = 300_000) => runProgram(join(REPO_ROOT, 'bin/svc.ts'), args, { env, cwd: work, timeoutMs });
  const put = async (path: string, text: string | null) => {
    if (text === null) return rm(join(work, path), { force: true });
    await mkdir(dirname(join(work, path)), { recursive: true });
    return writeFile(join(work, path), text);
  };

  // The uncommitted working tree.
  await put('.svc/workflows/ci.ts', workflow('uncommitted-change'));
  await put('data.txt', 'uncommitted data\n');
  await put('gone.txt', null);
  await put('ignored.txt', 'must not travel\n');
  await put('new.txt', 'brand new\n');
  await put('.svc/.secrets', 'API_KEY=from-the-file\n');

  await t.test('no name lists the fixtures', async (t) => {
    const listed = await svc(['run', 'remote']);
    t.equal(listed.code, 0, listed.stderr);
    t.match(listed.stdout, /ci-push\s+\(\.svc\/tests\/ci\.ts\)/);
    t.match(listed.stdout, /second-push/);
    const fixtures = await svc(['fixture', 'list', '--json']);
    t.equal(fixtures.code, 0, fixtures.stderr);
    t.same((JSON.parse(fixtures.stdout) as { fixtures: Array<{ id: string }> }).fixtures.map((f) => f.id), ['ci-push', 'second-push']);
    const shown = await svc(['fixture', 'show', 'second-push', '--json']);
    t.equal(shown.code, 0, shown.stderr);
    t.match(JSON.parse(shown.stdout), { id: 'second-push', branch: 'main', event: { type: 'push' }, normalized: { ref: 'refs/heads/main' } });
  });

  await t.test('usage errors exit 2', async (t) => {
    for (const args of [['--pick', 'ci-push'], ['--pick', '--all'], ['--pick', '--workflow', 'ci'], ['--pick']]) {
      const r = await svc(['run', 'remote', ...args]);
      t.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    }
    const offTerminal = await svc(['run', 'remote', '--pick']);
    t.match(offTerminal.stderr, /terminal/);
    const unknown = await svc(['run', 'remote', 'nothing-like-it']);
    t.equal(unknown.code, 1);
    t.match(unknown.stderr, /no fixture matches "nothing-like-it"; fixtures: ci-push, second-push/);
  });

  let runId = '';
  await t.test('an uncommitted change runs on a real agent', async (t) => {
    const r = await svc(['run', 'remote', 'ci-push', '--env', 'API_KEY=from-flag']);
    t.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    t.match(r.stdout, /MARKER uncommitted-change/, 'the uncommitted workflow ran');
    t.notMatch(r.stdout, /MARKER committed/);
    t.match(r.stdout, /DATA uncommitted data/, 'the modified file is the working tree\'s');
    t.match(r.stdout, /GONE absent/, 'the deleted file is absent from the checkout');
    t.match(r.stdout, /IGNORED absent/, 'the .svcignore\'d file was not uploaded');
    t.match(r.stdout, /NEW brand new/, 'the untracked file arrived');
    t.match(r.stdout, /TESTRUN true/);
    t.match(r.stdout, /SECRET length=9/, '--env wins over .svc/.secrets');
    const line = /✓ ci-push › ci: completed.*run ([0-9a-f-]{36})/.exec(r.stdout);
    t.ok(line, 'a result line');
    runId = line?.[1] ?? '';
    const row = (await stack.pool.one(sql.unsafe`select source_origin, sha from runs where id = ${runId}`)) as { source_origin: string; sha: string };
    t.same(row, { source_origin: 'run-remote', sha }, 'a test run of the commit at HEAD');
  });

  await t.test('the stored overlay is sealed', async (t) => {
    const bucket = new FilesystemStorage({ root: join(stack.root, 'orch', 'storage') });
    const page = await bucket.list(`remote-runs/${ORG}/`);
    t.ok(page.objects.length >= 1, 'an overlay is stored');
    for (const o of page.objects) {
      const chunks: Buffer[] = [];
      for await (const c of await bucket.get(o.key)) chunks.push(c as Buffer);
      const stored = Buffer.concat(chunks);
      t.equal(stored.subarray(0, 5).toString(), 'SVCX1', 'a sealed box');
      // The manifest of deleted files is plain JSON before sealing: it must not show.
      for (const plain of ['gone.txt', '"deleted"', 'uncommitted', 'ustar']) t.equal(stored.indexOf(plain), -1, `"${plain}" is not readable in the stored object`);
    }
  });

  await t.test('--all --parallel --junit, --json, --no-wait', async (t) => {
    const out = join(stack.root, 'out.xml');
    const r = await svc(['run', 'remote', '--all', '--parallel', '--junit', out, '--quiet']);
    t.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    t.equal(r.stdout.trim().split('\n').length, 2, 'one result line per run under --quiet');
    const xml = await readFile(out, 'utf8');
    t.equal(XMLValidator.validate(xml), true, 'well-formed XML');
    const doc = new XMLParser({ ignoreAttributes: false, isArray: (name) => ['testsuite', 'testcase'].includes(name) }).parse(xml) as {
      testsuites: { testsuite: Array<{ '@_name': string; '@_tests': string; '@_failures': string; testcase: Array<{ '@_name': string }> }> };
    };
    const suites = doc.testsuites.testsuite;
    t.same(suites.map((s) => s['@_name']).sort(), ['ci-push › ci', 'second-push › ci']);
    for (const s of suites) {
      t.same(s.testcase.map((c) => c['@_name']), ['check']);
      t.equal(s['@_failures'], '0');
    }
    const json = await svc(['run', 'remote', 'second-push', '--json']);
    t.equal(json.code, 0, json.stderr);
    const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { fixture: string; status: string; runId: string });
    t.equal(lines.length, 1);
    t.match(lines[0], { fixture: 'second-push', workflow: 'ci', status: 'completed', jobs: [{ name: 'check', status: 'completed' }] });
    const noWait = await svc(['run', 'remote', 'ci-push', '--no-wait']);
    t.equal(noWait.code, 0, noWait.stderr);
    t.match(noWait.stdout.trim(), /^[0-9a-f-]{36}$/, 'the run id only');
  });

  await t.test('a workflow added without svc compile runs (the lock compiled in memory travels)', async (t) => {
    await put('.svc/workflows/extra.ts', `import { job, push, workflow } from 'svc/sdk';
export default workflow('extra', { on: push({ branches: ['main'] }), jobs: { added: job({ runsOn: 'e2e', steps: (s) => s.step('hello', () => { console.log('EXTRA ' + 'ran'); }) }) } });
`);
    const r = await svc(['run', 'remote', 'ci-push', '--workflow', 'extra']);
    t.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    t.match(r.stdout, /EXTRA ran/);
    t.match(r.stdout, /✓ ci-push › extra: completed/);
    t.notMatch(r.stdout, /› ci:/, '--workflow kept only the named workflow');
    await put('.svc/workflows/extra.ts', null);
  });

  await t.test('a fixture mapping secrets to a non-test context is refused', async (t) => {
    const created = await stack.admin(['context', 'create', 'prod', '--repositories', 'acme/app']);
    t.equal(created.code, 0, created.stderr);
    await put('.svc/tests/denied.ts', DENIED);
    const before = Number(await stack.pool.oneFirst(sql.unsafe`select count(*) from runs where source_origin = 'run-remote'`));
    const r = await svc(['run', 'remote', 'denied']);
    t.equal(r.code, 1, r.stdout);
    t.match(r.stderr, /SVC_ERR_REMOTE_RUN_CONTEXT_DENIED|allowLocalExecution/);
    const after = Number(await stack.pool.oneFirst(sql.unsafe`select count(*) from runs where source_origin = 'run-remote'`));
    t.equal(after, before, 'no run created');
    await put('.svc/tests/denied.ts', null);
  });
});
