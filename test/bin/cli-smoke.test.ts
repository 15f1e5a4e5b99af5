// One real `svc` / `svc-admin` process per command family (the compiled bins under
// SVC_TEST_DIST=1, as shipped). The families' own tests run their commands in-process (runCli,
// test/fixtures/cli.ts); this keeps each family's path through bin/launch.ts, the oclif manifest
// and the process's real exit code and pipes under test: the exit code, what goes to stdout and
// what to stderr, and (svc approve without its run id) a usage error's exit 2.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createPat } from '../../kernel/relay/pats/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { REPO_ROOT, runProgram, type ProgramResult } from '../fixtures/programs.ts';
import { newOrg, startTestRelay } from '../kernel/relay/harness.ts';

// Real processes on a 2-core machine shared with other test files: allow for load.

const SVC = join(REPO_ROOT, 'bin/svc.ts');
const ADMIN = join(REPO_ROOT, 'bin/svc-admin.ts');

async function tempDir(t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Output on stdout only. */
function onStdout(t: Test, r: ProgramResult, code: number, stdout: RegExp, what: string): void {
  t.equal(r.code, code, `${what}: exit ${code} ${r.stderr}`);
  t.match(r.stdout, stdout, `${what}: stdout`);
  t.equal(r.stderr, '', `${what}: nothing on stderr`);
}

/** Output on stderr only. */
function onStderr(t: Test, r: ProgramResult, code: number, stderr: RegExp, what: string): void {
  t.equal(r.code, code, `${what}: exit ${code}`);
  t.equal(r.stdout, '', `${what}: nothing on stdout`);
  t.match(r.stderr, stderr, `${what}: stderr`);
}

t.test('svc-admin: one command per family', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const cwd = await tempDir(t, 'svc-cli-smoke-admin-');
    const env = { PATH: process.env['PATH'], HOME: process.env['HOME'], SVC_DATABASE_URL: db.url, SVC_SECRET_KEY: Buffer.alloc(32, 7).toString('base64') };
    const admin = (...args: string[]) => runProgram(ADMIN, args, { env, cwd });

    // The token alone on stdout (scripts capture it), the notice on stderr.
    const adminToken = await admin('admin-token', 'create', '--name', 'smoke', '--scope', 'runs.read');
    t.equal(adminToken.code, 0, adminToken.stderr);
    t.match(adminToken.stdout, /^svcadm_[A-Za-z0-9_-]{43}\n$/, 'admin-token: the token alone on stdout');
    t.match(adminToken.stderr, /admin token "smoke" .* created with scopes runs\.read; it is shown only now/, 'admin-token: the notice on stderr');
    t.notMatch(adminToken.stderr, adminToken.stdout.trim(), 'admin-token: the token is not on stderr');

    onStdout(t, await admin('agent-token', 'list'), 0, /^no agent tokens\n$/, 'agent-token list');
    onStdout(t, await admin('approvals', 'list'), 0, /^no approval holds\n$/, 'approvals list');
    onStdout(t, await admin('attestations', 'list'), 0, /^no attestations\n$/, 'attestations list');
    onStdout(t, await admin('cache', 'list'), 0, /^no cache entries\n$/, 'cache list');
    onStdout(t, await admin('cluster', 'nodes'), 0, /^no cluster nodes /, 'cluster nodes');
    onStdout(t, await admin('deliveries', 'list'), 0, /^no deliveries\n$/, 'deliveries list');
    const diagnose = await admin('diagnose', '--json');
    onStdout(t, diagnose, 1, /^\{/, 'diagnose --json (no orchestrator, no agent: a warning)');
    t.match(JSON.parse(diagnose.stdout), { status: 'warn', checks: [{ name: 'database', status: 'pass' }] });
    onStdout(t, await admin('event-dlq', 'count'), 0, /^0\n$/, 'event-dlq count');
    onStderr(t, await admin('runs', 'logs', '0b7c5b0e-0000-4000-8000-000000000000'), 1, /^SVC_ERR_RUN_NOT_FOUND: no run 0b7c5b0e-/, 'runs logs of an unknown run');

    // The context on stdout, the warning that nothing can use it yet on stderr, exit 0.
    const context = await admin('context', 'create', 'smoke');
    t.equal(context.code, 0, context.stderr);
    t.match(context.stdout, /^context smoke\n/, 'context create: the context on stdout');
    t.match(context.stderr, /^warning: context smoke has no binding/, 'context create: the warning on stderr');
    t.notMatch(context.stdout, /warning/);

    const settings = await admin('cluster-settings', 'show', '--json');
    onStdout(t, settings, 0, /^\{/, 'cluster-settings show --json');
    t.match(JSON.parse(settings.stdout), { settings: { maxDispatchAttempts: Number } });
    onStdout(t, await admin('source', 'list'), 0, /^no sources\n$/, 'source list');
  });
});

t.test('svc: one command per family', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await newOrg(db.pool, 'acme');
    const pat = await createPat(db.pool, 'acme', 'alice', 'smoke');
    const relay = await startTestRelay(t, db.url);
    const home = await tempDir(t, 'svc-cli-smoke-home-');
    const repo = await tempDir(t, 'svc-cli-smoke-repo-');
    const env = { PATH: process.env['PATH'], HOME: home, XDG_CONFIG_HOME: home, NO_COLOR: '1' };
    const svc = (...args: string[]) => runProgram(SVC, args, { env, cwd: repo });
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'dev@example.com');
    git('config', 'user.name', 'Dev');
    git('config', 'commit.gpgsign', 'false');

    onStdout(t, await svc('init'), 0, /created {5}\.svc\/workflows\/ci\.ts\n/, 'init');
    git('add', '-A');
    git('commit', '-q', '--no-verify', '-m', 'init');
    onStdout(t, await svc('compile'), 0, /^compiled 1 workflow: \.svc\/svc\.lock\.json unchanged\n$/, 'compile');
    onStdout(t, await svc('preview', 'push'), 0, /^event: push on branch main [\s\S]*match {4}ci {2}via push\(branches: main\)\n/m, 'preview push');
    onStdout(t, await svc('doctor'), 0, /^pass {2}node /, 'doctor');
    onStdout(t, await svc('hook', 'install'), 0, /^pre-commit hook installed: /, 'hook install');

    // --json: the summary alone on stdout, the run's stream on stderr.
    const local = await svc('run', 'push', '--local', '--json');
    t.equal(local.code, 0, local.stderr);
    t.match(JSON.parse(local.stdout), { status: 'completed', workflows: [{ workflow: 'ci', jobs: [{ displayName: 'build', status: 'completed' }] }] }, 'run --local --json: the summary on stdout');
    t.match(local.stderr, /^event: push on branch main[\s\S]*\[build\] /, 'run --local --json: the stream on stderr');

    onStdout(t, await svc('login', '--token', pat.token, '--platform-url', relay.url), 0, /acme/, 'login --token');
    onStdout(t, await svc('org', 'use', 'acme'), 0, /acme/, 'org use');
    const pats = await svc('pat', 'list', '--json');
    onStdout(t, pats, 0, /^\{/, 'pat list --json');
    t.match(JSON.parse(pats.stdout), { tokens: [{ name: 'smoke', revokedAt: null }] });
    onStdout(t, await svc('runs', 'list'), 0, /\S/, 'runs list');
    // A usage error: exit 2, oclif's text on stderr and nothing on stdout.
    onStderr(t, await svc('approve'), 2, /Missing 1 required arg:[\s\S]*USAGE\n {2}\$ svc approve RUN_ID/, 'approve without a run id');
  });
});
