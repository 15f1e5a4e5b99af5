// `svc compile` and `svc preview <event>` answer without oclif (cli/fast-path.ts). Which command
// lines take that path, and that a real `svc` process prints, writes and exits alike either way:
// the same command runs once as is and once with DEBUG set to empty (the fast path leaves any
// DEBUG to oclif, and oclif's debug output stays off for an empty value).
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { fastCommand } from '../../cli/fast-path.ts';
import { REPO_ROOT, runProgram, type ProgramResult } from '../fixtures/programs.ts';

const SVC = join(REPO_ROOT, 'bin/svc.ts');

t.test('which command lines the fast path takes', async (t) => {
  t.same(fastCommand(['compile'], {}), { command: 'compile', flags: { check: false, verbose: false, 'fail-on-drift': false } });
  t.same(fastCommand(['compile', '--verbose', '--check', '--fail-on-drift'], {}), { command: 'compile', flags: { check: true, verbose: true, 'fail-on-drift': true } });
  t.same(fastCommand(['preview', 'push'], {}), { command: 'preview', event: 'push', debug: false });
  t.same(fastCommand(['preview', '--debug', 'pr', '--branch', 'main'], {}), { command: 'preview', event: 'pr', debug: true, branch: 'main' });
  t.same(fastCommand(['preview', 'tag:v1', '--branch=release/1'], {}), { command: 'preview', event: 'tag:v1', debug: false, branch: 'release/1' });
  // Everything else is oclif's: its parser, help, JSON output and errors.
  for (const argv of [
    [],
    ['--version'],
    ['init'],
    ['compile', '--json'],
    ['compile', '--help'],
    ['compile', '-h'],
    ['compile', '--check', '--check'],
    ['compile', '--check=true'],
    ['compile', 'extra'],
    ['compile', '--'],
    ['compile', '--bogus'],
    ['preview'],
    ['preview', 'push', 'pr'],
    ['preview', 'push', '--json'],
    ['preview', 'push', '--branch'],
    ['preview', 'push', '--branch', '--debug'],
    ['preview', 'push', '--branch='],
    ['preview', 'push', '--branch', 'a', '--branch', 'b'],
    ['preview', 'push', '--debug', '--debug'],
    ['preview', '--', 'push'],
    ['preview', '-x', 'push'],
  ]) {
    t.equal(fastCommand(argv, {}), undefined, `oclif: svc ${argv.join(' ')}`);
  }
  t.equal(fastCommand(['compile'], { SVC_CONTENT_TYPE: 'json' }), undefined, 'oclif: SVC_CONTENT_TYPE (JSON output)');
  t.equal(fastCommand(['compile'], { DEBUG: '*' }), undefined, 'oclif: DEBUG');
});

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';
export default workflow('ci', {
  on: [push({ branches: ['main'], paths: ['src/**'] })],
  jobs: { test: job({ runsOn: ['linux'], steps: (s) => s.step('hello', async (ctx) => { await ctx.$\`echo hi\`; }) }) },
});
`;

/** A committed project; both copies get the same folder name and commit id, so preview's lines match. */
async function project(t: Test): Promise<string> {
  const parent = await mkdtemp(join(tmpdir(), 'svc-fast-path-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  const dir = join(parent, 'project');
  await mkdir(join(dir, '.svc/workflows'), { recursive: true });
  await writeFile(join(dir, '.svc/workflows/ci.ts'), WORKFLOW);
  const date = '2026-01-01T00:00:00Z';
  const env = { ...process.env, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'ignore', env });
  git('init', '-q', '-b', 'main');
  git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'start');
  return dir;
}

t.test('a real svc process: the fast path and oclif print, write and exit alike', async (t) => {
  const run = async (dir: string, args: string[], viaOclif: boolean): Promise<ProgramResult & { lock: string | undefined }> => {
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], ...(viaOclif ? { DEBUG: '' } : {}) };
    const r = await runProgram(SVC, args, { env, cwd: dir });
    const lock = await readFile(join(dir, '.svc/svc.lock.json'), 'utf8').catch(() => undefined);
    return { ...r, lock };
  };
  const fastDir = await project(t);
  const oclifDir = await project(t);
  const both = async (args: string[], edit?: (dir: string) => Promise<void>): Promise<ProgramResult> => {
    for (const dir of [fastDir, oclifDir]) await edit?.(dir);
    const fast = await run(fastDir, args, false);
    const oclif = await run(oclifDir, args, true);
    const what = `svc ${args.join(' ')}`;
    t.equal(fast.code, oclif.code, `${what}: exit code ${oclif.code}`);
    t.equal(fast.stdout, oclif.stdout, `${what}: stdout`);
    t.equal(fast.stderr, oclif.stderr, `${what}: stderr`);
    t.equal(fast.lock, oclif.lock, `${what}: the lock file`);
    return fast;
  };
  t.match((await both(['compile', '--check'])).stderr, /svc compile/, 'a missing lock fails the check');
  t.match((await both(['compile'])).stdout, /^compiled 1 workflow: \.svc\/svc\.lock\.json written\n$/);
  t.match((await both(['compile', '--check', '--verbose'])).stdout, /up to date \(1 workflow\)\nci {2}/);
  t.equal((await both(['compile', '--fail-on-drift'])).code, 2, 'a usage error exits 2');
  t.match((await both(['preview', 'push', '--debug', '--branch', 'main'])).stdout, /^event: push on branch main/);
  const broken = await both(['compile'], (dir) => writeFile(join(dir, '.svc/workflows/ci.ts'), 'export default 42;\n'));
  t.match(broken.stderr, /^SVC_ERR_COMPILE_NOT_A_WORKFLOW: \.svc\/workflows\/ci\.ts: the default export is number/);
  t.equal(broken.code, 1);
  const outside = await mkdtemp(join(tmpdir(), 'svc-fast-path-empty-'));
  t.teardown(() => rm(outside, { recursive: true, force: true }));
  const fast = await run(outside, ['compile'], false);
  const oclif = await run(outside, ['compile'], true);
  t.same([fast.code, fast.stdout, fast.stderr], [oclif.code, oclif.stdout, oclif.stderr], 'no .svc/: the same error');
  t.match(fast.stderr, /^SVC_ERR_COMPILE_SVC_DIR_MISSING: /);
});
