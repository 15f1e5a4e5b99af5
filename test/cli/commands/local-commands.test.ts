// The developer CLI commands that need no Platform, in-process (runCli; `svc admin` as real processes): `svc --help` names every
// command of the spec, topic help has its own text, `svc docs`, `svc admin`, `svc feedback`
// without --draft, and `svc diagnostics` offline (nothing reachable, secrets still redacted, the
// .svc/ state of a real git repository).
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import t from 'tap';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT, runProgram } from '../../fixtures/programs.ts';


const home = await mkdtemp(join(tmpdir(), 'svc-local-'));
t.teardown(() => rm(home, { recursive: true, force: true }));
const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN', 'SVC_SECRET_KEY', 'SVC_ADMIN_BIN']) delete baseEnv[name];
const svc = (args: string[], env: Record<string, string> = {}, cwd?: string) =>
  runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...baseEnv, ...env }, ...(cwd !== undefined ? { cwd } : {}) });
const svcAdmin = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: baseEnv });
// Real processes: `svc admin` hands its own stdout/stderr to the svc-admin it starts (inherited,
// not written through process.stdout), and `--version` is answered before oclif loads.
const svcProcess = (args: string[], env: Record<string, string> = {}) => runProgram(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...baseEnv, ...env }, timeoutMs: 60_000 });
const svcAdminProcess = (args: string[]) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: baseEnv, timeoutMs: 60_000 });

/** Command and topic names of an oclif root help (`TOPICS` and `COMMANDS` sections). */
function helpNames(help: string): Set<string> {
  const names = new Set<string>();
  let section = '';
  for (const line of help.split('\n')) {
    if (/^[A-Z]+$/.test(line.trim()) && !line.startsWith(' ')) section = line.trim();
    const m = /^ {2}(\S+)/.exec(line);
    if (m !== null && (section === 'TOPICS' || section === 'COMMANDS')) names.add(m[1]!);
  }
  return names;
}

// The spec's "Developer CLI (`svc`)" section: the command table and the sentence "Other command
// names: …". Hard-coded (the spec is not in this repository). `run remote` is a form of `run`.
const SPEC_COMMANDS = [
  'compile', 'preview', 'run', 'runs', 'hook', 'verify-attestation', 'login', 'org', 'diagnostics', 'doctor', 'feedback', 'init',
  'types', 'workflows', 'docs', 'reject', 'approve', 'logout', 'secrets', 'admin', 'orchestrators', 'endpoints', 'notifications', 'report',
  'pat', 'fixture',
];

t.test('svc --help names every command of the spec', async (t) => {
  const help = await svc(['--help']);
  t.equal(help.code, 0, help.stderr);
  const names = helpNames(help.stdout);
  for (const name of SPEC_COMMANDS) t.ok(names.has(name), `svc --help lists ${name}`);
  const runs = await svc(['runs', '--help']);
  t.match(runs.stdout, /runs list/);
  t.match(runs.stdout, /runs logs/);
  const secrets = await svc(['secrets', '--help']);
  t.match(secrets.stdout, /secrets list[\s\S]*secrets set/);
});

t.test('topic help has its own description, not a subcommand text', async (t) => {
  const cases: Array<[typeof svc, string, string[]]> = [
    [svc, 'runs', ['list', 'show', 'logs', 'artifacts', 'download']],
    [svc, 'secrets', ['list', 'set']],
    [svc, 'hook', ['install', 'post-receive']],
    [svcAdmin, 'signing-key', ['list', 'generate', 'rotate']],
  ];
  for (const [cli, topic, subs] of cases) {
    const res = await cli([topic, '--help']);
    t.equal(res.code, 0, res.stderr);
    const first = res.stdout.split('\n')[0]!.trim();
    t.ok(first.length > 0, `${topic}: a first line`);
    for (const sub of subs) {
      const subHelp = await cli([topic, sub, '--help']);
      const subFirst = subHelp.stdout.split('\n')[0]!.trim();
      t.not(first, subFirst, `${topic} --help does not repeat "${topic} ${sub}"`);
    }
  }
});

t.test('svc docs lists the shipped topics, prints one, refuses an unknown one', async (t) => {
  const files = (await readdir(join(REPO_ROOT, 'docs'))).filter((f) => f.endsWith('.md'));
  const list = await svc(['docs', '--json']);
  t.equal(list.code, 0, list.stderr);
  const topics = JSON.parse(list.stdout).topics.map((x: { topic: string }) => x.topic);
  t.same(topics, files.map((f) => f.slice(0, -3)).sort());
  const text = await svc(['docs']);
  t.match(text.stdout, /^cli\s+\S/m);
  const cli = await svc(['docs', 'cli']);
  t.equal(cli.code, 0, cli.stderr);
  t.equal(cli.stdout, await readFile(join(REPO_ROOT, 'docs', 'cli.md'), 'utf8'));
  const unknown = await svc(['docs', 'no-such-topic']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /no documentation topic "no-such-topic"; topics: .*\bcli\b.*\bsecrets\b/);
  const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8'));
  t.ok(pkg.files.includes('docs'), 'docs/ ships with the package');
});

t.test('svc admin runs svc-admin with the arguments and its exit code', async (t) => {
  const version = await svcProcess(['admin', '--', '--version']);
  t.equal(version.code, 0, version.stderr);
  t.equal(version.stdout, (await svcAdminProcess(['--version'])).stdout);
  const topic = await svcProcess(['admin', 'signing-key', '--', '--help']);
  t.match(topic.stdout, /svc-admin signing-key/);
  const usage = await svcProcess(['admin', 'secret', 'set']);
  t.equal(usage.code, 2, "svc-admin's usage error keeps its exit code");
  t.match(usage.stderr, /Missing 2 required args/);
  // Any exit code passes through.
  const script = join(home, 'fake-admin.sh');
  await writeFile(script, '#!/bin/sh\necho "args: $*"\nexit 7\n');
  await chmod(script, 0o755);
  const seven = await svcProcess(['admin', 'runs', 'list', '--json'], { SVC_ADMIN_BIN: script });
  t.equal(seven.code, 7);
  t.equal(seven.stdout, 'args: runs list --json\n', '--json and every other argument belong to svc-admin');
  const missing = await svcProcess(['admin', 'runs', 'list'], { SVC_ADMIN_BIN: join(home, 'no-such-svc-admin') });
  t.equal(missing.code, 1);
  t.match(missing.stderr, /SVC_ERR_CLI_ADMIN_NOT_INSTALLED: svc-admin is not installed/);
});

t.test('svc feedback drafts only: without --draft a usage error, an existing file is not overwritten', async (t) => {
  const none = await svc(['feedback']);
  t.equal(none.code, 2);
  t.match(none.stderr, /--draft/);
  const out = await svc(['feedback', '--draft'], { SVC_TOKEN: 'svcpat_feedbacksecret', SVC_PLATFORM_URL: 'http://127.0.0.1:9', SVC_ORG: 'acme' });
  t.equal(out.code, 0, out.stderr);
  t.match(out.stdout, /^# svc bug report \(draft\)/);
  t.match(out.stdout, /platform {4}http:\/\/127\.0\.0\.1:9: not reachable/);
  t.notMatch(out.stdout, 'svcpat_feedbacksecret');
  const existing = join(home, 'exists.md');
  await writeFile(existing, 'mine');
  const refused = await svc(['feedback', '--draft', '--out', existing]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /SVC_ERR_CLI_FEEDBACK_WRITE: .*exists/);
  t.equal(await readFile(existing, 'utf8'), 'mine');
});

t.test('svc diagnostics offline: versions, settings set, .svc/ state, every secret redacted', async (t) => {
  const repo = await mkdtemp(join(tmpdir(), 'svc-diag-repo-'));
  t.teardown(() => rm(repo, { recursive: true, force: true }));
  await execa('git', ['init', '-q'], { cwd: repo });
  await mkdir(join(repo, '.svc'));
  const token = 'svcpat_storedtokenvalue123';
  const platformToken = 'org-platform-token-abcdef';
  await mkdir(join(home, 'svc'), { recursive: true });
  await writeFile(join(home, 'svc', 'config.json'), JSON.stringify({ platformUrl: 'http://127.0.0.1:9', org: 'acme', token }));
  const env = { SVC_PLATFORM_TOKEN: platformToken, SVC_SECRET_KEY: 'bWFzdGVyLWtleS1zZWNyZXQ=' };
  const res = await svc(['diagnostics', '--json'], env, repo);
  t.equal(res.code, 0, res.stderr);
  const report = JSON.parse(res.stdout);
  t.match(report, {
    svc: { version: /^\d+\.\d+\.\d+/ },
    node: { version: process.versions.node },
    config: { path: join(home, 'svc', 'config.json'), exists: true, platformUrl: 'http://127.0.0.1:9', org: 'acme', token: 'set' },
    env: { SVC_PLATFORM_TOKEN: 'set', SVC_SECRET_KEY: 'set' },
    platform: { reachable: false, whoami: null, error: /cannot reach the Platform/ },
    git: { version: /^git version/ },
  });
  t.equal(report.project.checks.find((c: { name: string }) => c.name === 'svc-dir').status, 'pass');
  t.ok(report.project.checks.some((c: { name: string }) => c.name === 'lock'), 'the lock check is reported');
  const text = await svc(['diagnostics'], env, repo);
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, /token {7}set \[redacted\]/);
  for (const out of [res.stdout, res.stderr, text.stdout, text.stderr]) {
    t.notMatch(out, token);
    t.notMatch(out, platformToken);
    t.notMatch(out, 'bWFzdGVyLWtleS1zZWNyZXQ=');
  }
  await rm(join(home, 'svc'), { recursive: true, force: true });
});
