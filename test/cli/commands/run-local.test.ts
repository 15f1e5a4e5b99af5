// `svc run <event> --local` as a real child process on a real git repository: a two-job
// workflow (needs, matrix, outputs passed on, a rule-skipped step, a masked secret, a recorded
// emit, an orchestrator-only API refused), exit codes, --json, --debug, and bad input; the
// repository files a job gets (HEAD, --uncommitted, the working tree outside git).
import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parseEnvFlags, parseSecretsText } from '../../../cli/local-run/secrets.ts';
import { commitAll, runSvc, tempRepo, writeFiles } from '../../fixtures/workflow-trees/index.ts';


const SECRET = 'sk_local_file_secret_42';
const FLAG_SECRET = 'sk_from_the_flag_77';

const CI = `import { job, push, skip, step, workflow } from 'svc/sdk';

export default workflow('ci', {
  on: push({ branches: ['main'] }),
  jobs: {
    build: job({
      runsOn: 'linux',
      steps: [
        step('compile', async (ctx) => {
          const key = await ctx.secrets.get('API_KEY');
          ctx.log.info('using key ' + key);
          const { stdout } = await ctx.$\`echo artifact-1\`;
          await ctx.emit('built', { artifact: stdout.trim() });
          return { artifact: stdout.trim() };
        }),
        step('publish docs', async () => {}, { rules: [skip('not on a local run', (c) => c.event.branch === 'main')] }),
      ],
      outputs: (ctx) => ({ artifact: (ctx.outputsOf('compile') as { artifact: string }).artifact }),
    }),
    test: job({
      runsOn: 'linux',
      needs: ['build'],
      matrix: { node: ['22', '24'] },
      steps: [
        step('unit', async (ctx) => {
          ctx.log.info('testing ' + String(ctx.jobOutputs('build')?.['artifact']) + ' on node ' + String(ctx.matrix['node']));
          const flag = ctx.secrets.get('FLAG_KEY') ?? 'none';
          ctx.log.info('flag ' + flag);
        }),
      ],
    }),
  },
});
`;

const FAILING = `import { job, push, step, workflow } from 'svc/sdk';

export default workflow('deploy', {
  on: push({ branches: ['main'] }),
  jobs: {
    token: job({
      runsOn: 'linux',
      steps: [
        step('mint', async (ctx) => {
          await ctx.svc.oidc.token({ audience: 'sts.example.com' });
        }),
      ],
    }),
    after: job({ runsOn: 'linux', needs: ['token'], steps: [step('never', async () => {})] }),
  },
});
`;

function repo(t: Parameters<typeof tempRepo>[0], files: Record<string, string>): string {
  const dir = tempRepo(t, { '.svc/.svcignore': 'node_modules/\ntypes/\n.secrets\n.env.local\n', '.svc/.secrets': `API_KEY=${SECRET}\n`, ...files }, { git: true });
  commitAll(dir, 'workflows');
  return dir;
}

t.test('two jobs: needs, matrix, outputs, a skipped step, a masked secret; exit 0', async (t) => {
  const dir = repo(t, { '.svc/workflows/ci.ts': CI });
  const result = await runSvc(dir, ['run', 'push', '--local', '--env', `FLAG_KEY=${FLAG_SECRET}`]);
  t.equal(result.code, 0, 'exit 0');
  if (result.code !== 0) t.comment(result.stdout + result.stderr);
  const out = result.stdout;
  t.notMatch(out, SECRET, 'the file secret never appears');
  t.notMatch(out, FLAG_SECRET, 'the --env secret never appears');
  t.match(out, '[build] compile | using key ***');
  t.match(out, '[build] compile | artifact-1');
  t.match(out, /\[build\] <== publish docs skipped: skipped by step rule: not on a local run/);
  t.match(out, /\[build\] emit built \{"artifact":"artifact-1"\} \(recorded, not delivered: local run\)/);
  t.match(out, '[test (22)] unit | testing artifact-1 on node 22');
  t.match(out, '[test (24)] unit | testing artifact-1 on node 24');
  t.match(out, '[test (24)] unit | flag ***');
  t.match(out, /restoring source from http:\/\/127\.0\.0\.1:\d+\//);
  t.match(out, /workflow content hash verified/);
  // The dependent starts only after its need: every test line comes after build's end.
  const buildEnd = out.indexOf('[build] job completed');
  t.ok(buildEnd > 0 && out.indexOf('[test (22)]') > buildEnd && out.indexOf('[test (24)]') > buildEnd, 'needs order');
  t.match(out, /summary: completed\n  ci: completed\n    completed\s+build\s+\d+(?:\.\d)?m?s\n    completed\s+test \(22\)\s+\d+(?:\.\d)?m?s\n    completed\s+test \(24\)/);
  t.match(out, /emitted built from build \(local-1\)/);

  // --json: only the summary on stdout (the stream goes to stderr); uncommitted edits run too.
  writeFiles(dir, { '.svc/workflows/ci.ts': CI.replace("'using key '", "'edited: key '") });
  const json = await runSvc(dir, ['run', 'push', '--local', '--json']);
  t.equal(json.code, 0, 'exit 0');
  if (json.code !== 0) t.comment(json.stderr);
  const summary = JSON.parse(json.stdout) as { status: string; workflows: Array<{ workflow: string; jobs: Array<{ displayName: string; status: string; startedAt: string; finishedAt: string; outputs: unknown; matrix: unknown; steps: Array<{ name: string; status: string }> }> }>; emitted: unknown[]; secrets: Record<string, string> };
  t.equal(summary.status, 'completed');
  const jobs = summary.workflows[0]!.jobs;
  t.same(jobs.map((j) => [j.displayName, j.status]), [['build', 'completed'], ['test (22)', 'completed'], ['test (24)', 'completed']]);
  t.same(jobs[0]!.outputs, { artifact: 'artifact-1' });
  t.same(jobs[0]!.steps.map((s) => [s.name, s.status]), [['compile', 'completed'], ['publish docs', 'skipped']]);
  t.same(jobs[1]!.matrix, { node: '22' });
  // Parallel stays parallel: the two matrix instances overlap in time.
  const [, a, b] = jobs.map((j) => ({ start: Date.parse(j.startedAt), end: Date.parse(j.finishedAt) }));
  t.ok(a!.start < b!.end && b!.start < a!.end, 'independent jobs ran at the same time');
  t.same(summary.secrets, { API_KEY: '.svc/.secrets' });
  t.match(summary.emitted, [{ eventName: 'built', payload: { artifact: 'artifact-1' }, deliveryId: 'local-1' }]);
  t.match(json.stderr, '[build] compile | edited: key ***');
  t.notMatch(json.stderr + json.stdout, SECRET);
});

t.test('a failing job: dependents skipped, orchestrator APIs refused, exit 1; --debug verdicts', async (t) => {
  const dir = repo(t, { '.svc/workflows/deploy.ts': FAILING, '.svc/workflows/ci.ts': CI });
  const result = await runSvc(dir, ['run', 'push', '--local', '--debug']);
  t.equal(result.code, 1, 'exit 1');
  if (result.code !== 1) t.comment(result.stdout + result.stderr);
  t.match(result.stdout, /\[deploy\/token\] <== mint failed: .*not available in a local run/);
  t.match(result.stdout, /deploy: failed\n/);
  t.match(result.stdout, /\n\s+failed\s+token\s+\d+(?:\.\d)?m?s\s+step "mint" failed: .*not available in a local run/);
  t.match(result.stdout, /\n\s+skipped\s+after\s+needs token which failed/);
  t.match(result.stdout, /ci: completed/, 'the other workflow still ran');
  t.match(result.stderr, /match    ci via push/);
  t.match(result.stderr, /push#0\s+branches\s+pass/);
  t.match(result.stderr, /secret API_KEY from \.svc\/\.secrets/);
  t.notMatch(result.stdout + result.stderr, SECRET);
});

t.test('no match, usage errors and bad input', async (t) => {
  const dir = repo(t, { '.svc/workflows/ci.ts': CI });
  const none = await runSvc(dir, ['run', 'tag:v1.0.0', '--local']);
  t.equal(none.code, 0);
  t.match(none.stdout, /no workflow matches tag:v1\.0\.0; nothing to run/);

  const retired = await runSvc(dir, ['run', 'local']);
  t.equal(retired.code, 2);
  t.match(retired.stderr, /`svc run local` is retired/);
  const noLocal = await runSvc(dir, ['run', 'push']);
  t.equal(noLocal.code, 2);
  t.match(noLocal.stderr, /needs --local/);
  const badEvent = await runSvc(dir, ['run', 'pusj', '--local']);
  t.equal(badEvent.code, 2);
  t.match(badEvent.stderr, /unknown event "pusj"/);
  const badEnv = await runSvc(dir, ['run', 'push', '--local', '--env', 'NOEQUALS']);
  t.equal(badEnv.code, 2);
  t.match(badEnv.stderr, /--env "NOEQUALS": expected KEY=VALUE/);

  writeFiles(dir, { '.svc/.secrets': 'API_KEY="unterminated\n' });
  const badFile = await runSvc(dir, ['run', 'push', '--local']);
  t.equal(badFile.code, 1);
  t.match(badFile.stderr, /SVC_ERR_LOCAL_SECRETS_SYNTAX: \.svc\/\.secrets line 1: unterminated double quote/);

  // Outside git the event has no branch unless --branch names one: nothing matches, said once on stderr.
  const plain = tempRepo(t, { '.svc/workflows/ci.ts': CI });
  const noGit = await runSvc(plain, ['run', 'push', '--local']);
  t.equal(noGit.code, 0);
  t.match(noGit.stderr, /^note: not a git repository: the jobs get the working tree's files .*no branch \(name one with --branch\)$/m);
  t.match(noGit.stdout, /no workflow matches push; nothing to run/);
});

const FILES = `import { job, push, step, workflow } from 'svc/sdk';

export default workflow('files', {
  on: push({ branches: ['main'] }),
  jobs: {
    read: job({
      runsOn: 'linux',
      checkout: { submodules: true },
      steps: [
        step('show', async (ctx) => {
          await ctx.$\`cat data.txt\`;
          await ctx.$\`ls -A\`;
        }),
      ],
    }),
  },
});
`;

/** Whether `ls -A` in the job listed `file`. */
const listed = (out: string, file: string) => out.split('\n').includes(`[read] show | ${file}`);

t.test('jobs get the repository files as committed; --uncommitted adds the working tree changes', async (t) => {
  const dir = repo(t, { '.svc/workflows/files.ts': FILES, 'data.txt': 'A\n', 'gone.txt': 'tracked\n', '.gitignore': 'ignored.txt\n' });
  writeFiles(dir, { 'data.txt': 'B\n', 'new.txt': 'untracked\n', 'ignored.txt': 'ignored\n' });
  unlinkSync(join(dir, 'gone.txt'));

  const committed = await runSvc(dir, ['run', 'push', '--local']);
  t.equal(committed.code, 0);
  if (committed.code !== 0) t.comment(committed.stdout + committed.stderr);
  t.match(committed.stdout, /^\[read\] show \| A$/m, 'the committed content');
  t.notMatch(committed.stdout, /^\[read\] show \| B$/m);
  t.ok(listed(committed.stdout, 'gone.txt'), 'a tracked file deleted in the working tree is in HEAD');
  t.notOk(listed(committed.stdout, 'new.txt'), 'an untracked file is not');
  t.notOk(listed(committed.stdout, 'ignored.txt'));
  t.ok(listed(committed.stdout, '.svc'), 'the workflow tree is there');
  t.notOk(listed(committed.stdout, '.git'));
  t.match(committed.stdout, /\[local\] repository files: 3 from HEAD in \d+ ms/);
  t.match(committed.stdout, /\[local\] job read: checkout\.submodules\/lfs are not fetched by a local run; the job gets your checkout's files/, 'a local run says what it does with checkout.submodules');
  t.notMatch(committed.stderr, /^note:/m);

  const uncommitted = await runSvc(dir, ['run', 'push', '--local', '--uncommitted', '--json']);
  t.equal(uncommitted.code, 0);
  if (uncommitted.code !== 0) t.comment(uncommitted.stdout + uncommitted.stderr);
  t.match(uncommitted.stderr, /^\[read\] show \| B$/m, 'the modification');
  t.ok(listed(uncommitted.stderr, 'new.txt'), 'the untracked, not ignored file');
  t.notOk(listed(uncommitted.stderr, 'gone.txt'), 'the deleted file is absent');
  t.notOk(listed(uncommitted.stderr, 'ignored.txt'), 'an ignored file is absent');
  t.match(JSON.parse(uncommitted.stdout), { status: 'completed', files: { origin: 'head+uncommitted', count: 3 } });
});

t.test('no commit yet, or no git at all: the working tree less what is ignored, said on stderr', async (t) => {
  const files = { '.svc/workflows/files.ts': FILES, 'data.txt': 'W\n', '.gitignore': 'ignored.txt\n', '.svcignore': 'private.txt\n', 'ignored.txt': 'x\n', 'private.txt': 'x\n' };
  const fresh = tempRepo(t, files, { git: true });
  const noCommit = await runSvc(fresh, ['run', 'push', '--local']);
  t.equal(noCommit.code, 0);
  if (noCommit.code !== 0) t.comment(noCommit.stdout + noCommit.stderr);
  t.match(noCommit.stderr, /^note: no commit yet: the jobs get the working tree's files \(without what \.gitignore and \.svcignore exclude\)$/m);
  t.match(noCommit.stdout, /^\[read\] show \| W$/m);

  const plain = tempRepo(t, files);
  const noGit = await runSvc(plain, ['run', 'push', '--local', '--branch', 'main']);
  t.equal(noGit.code, 0);
  if (noGit.code !== 0) t.comment(noGit.stdout + noGit.stderr);
  t.equal(noGit.stderr.split('\n').filter((l) => l.startsWith('note:')).length, 1, 'one line says so');
  t.match(noGit.stderr, /^note: not a git repository: .*; the event has no commit$/m);
  t.match(noGit.stdout, /^\[read\] show \| W$/m);
  for (const out of [noCommit.stdout, noGit.stdout]) {
    t.ok(listed(out, 'data.txt'));
    t.notOk(listed(out, 'ignored.txt'), '.gitignore is respected');
    t.notOk(listed(out, 'private.txt'), '.svcignore is respected');
    t.notOk(listed(out, '.git'));
  }
});

t.test('secret files and --env flags parse', async (t) => {
  t.same(parseSecretsText('# comment\n\nexport A=1\nB = "two\\nlines"\nC=\'single # not comment\'\nD=plain # comment\nctx:E=x\n', 'f'), {
    A: '1',
    B: 'two\nlines',
    C: 'single # not comment',
    D: 'plain',
    'ctx:E': 'x',
  });
  t.throws(() => parseSecretsText('NOPE\n', 'f'), { message: 'f line 1: expected KEY=VALUE' });
  t.throws(() => parseSecretsText('1BAD=x\n', 'f'), { code: 'SVC_ERR_LOCAL_SECRETS_SYNTAX' });
  t.same(parseEnvFlags(['A=1', 'B=x=y', 'C=']), { A: '1', B: 'x=y', C: '' });
  t.throws(() => parseEnvFlags(['=x']), { code: 'SVC_ERR_CLI_USAGE' });
});
