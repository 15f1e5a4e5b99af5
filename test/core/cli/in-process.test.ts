// runCli (test/fixtures/cli.ts) runs svc / svc-admin inside the test process as the bins would in
// their own: exit codes 0/1/2 come through, stdout and stderr are captured apart, the command sees
// only the given environment and working directory (both restored after), stdin is what the call
// gives, and a process.exit inside a command ends that command, not the test process.
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';

const SVC = join(REPO_ROOT, 'bin/svc.ts');
const ADMIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: '/nonexistent', ...extra });

function tempDir(t: Test): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'svc-in-process-')));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('exit codes 0, 1 and 2; stdout and stderr apart', async (t) => {
  const help = await runCli(SVC, ['--help'], { env: env() });
  t.equal(help.code, 0);
  t.match(help.stdout, /^svc developer CLI/);
  t.equal(help.stderr, '');

  const failed = await runCli(SVC, ['compile'], { env: env(), cwd: tempDir(t) });
  t.equal(failed.code, 1);
  t.equal(failed.stdout, '');
  t.match(failed.stderr, /^SVC_ERR_COMPILE_SVC_DIR_MISSING: no \.svc\/ directory in /);

  const json = await runCli(SVC, ['compile', '--json'], { env: env(), cwd: tempDir(t) });
  t.equal(json.code, 1);
  t.match(JSON.parse(json.stdout), { error: { code: 'SVC_ERR_COMPILE_SVC_DIR_MISSING' } }, 'under --json the error object goes to stdout');
  t.match(json.stderr, /^SVC_ERR_COMPILE_SVC_DIR_MISSING/);

  const usage = await runCli(ADMIN, ['admin-token', 'list'], { env: env() });
  t.equal(usage.code, 2, 'SVC_ERR_CLI_USAGE');
  t.equal(usage.stdout, '');
  t.match(usage.stderr, /needs the orchestrator database/);

  const unknownFlag = await runCli(ADMIN, ['admin-token', 'list', '--bogus'], { env: env() });
  t.equal(unknownFlag.code, 2, "oclif's parse errors (its handle() exits) are usage errors too");
  t.match(unknownFlag.stderr, /Nonexistent flag: --bogus/);
  t.equal(process.exitCode, undefined, "the command's exit code is not left on this process");
});

t.test('the environment is the given one, and this process keeps its own', async (t) => {
  const before = process.env;
  process.env['SVC_PLATFORM_URL'] = 'http://127.0.0.1:2';
  t.teardown(() => void delete process.env['SVC_PLATFORM_URL']);

  const isolated = await runCli(SVC, ['endpoints'], { env: env() });
  t.equal(isolated.code, 1);
  t.match(isolated.stderr, /SVC_ERR_CLI_NOT_LOGGED_IN/, "this process's SVC_PLATFORM_URL is not the command's");

  const given = await runCli(SVC, ['endpoints'], { env: env({ SVC_PLATFORM_URL: 'http://127.0.0.1:1', SVC_TOKEN: 'x', SVC_ORG: 'acme' }) });
  t.equal(given.code, 1);
  t.match(given.stderr, /cannot reach the Platform at http:\/\/127\.0\.0\.1:1/, 'the given SVC_PLATFORM_URL is');

  t.equal(process.env, before, 'process.env is this process’s object again');
  t.equal(process.env['SVC_PLATFORM_URL'], 'http://127.0.0.1:2');
  t.equal(process.env['SVC_TOKEN'], undefined, 'nothing of the command’s env stays behind');
});

t.test('cwd is the given one and restored; calls at the same time run one after the other', async (t) => {
  const cwd = process.cwd();
  const [a, b] = [tempDir(t), tempDir(t)];
  const [ra, rb] = await Promise.all([runCli(SVC, ['workflows'], { env: env(), cwd: a }), runCli(SVC, ['workflows'], { env: env(), cwd: b })]);
  t.match(ra, { code: 1, stdout: '', stderr: `SVC_ERR_COMPILE_SVC_DIR_MISSING: no .svc/ directory in ${a} or above: run \`svc init\` first\n` });
  t.match(rb, { code: 1, stdout: '', stderr: `SVC_ERR_COMPILE_SVC_DIR_MISSING: no .svc/ directory in ${b} or above: run \`svc init\` first\n` });
  t.equal(process.cwd(), cwd);
  // The repository root has its own .svc/ (svc's CI, docs/testing.md "svc tests svc").
  const byDefault = await runCli(SVC, ['workflows'], { env: env() });
  t.match(byDefault, { code: 0, stdout: /^svc {2}\(\.svc\/workflows\/ci\.ts#default\)$/m }, 'by default, the repository root (as runProgram)');
});

t.test('process.exit inside a command ends the command with its code, not this process', async (t) => {
  const dir = tempDir(t);
  const plugin = join(dir, 'exits.mjs');
  writeFileSync(plugin, "process.stdout.write('before exit\\n');\nprocess.stderr.write('on stderr\\n');\nprocess.exit(3);\nprocess.stdout.write('never\\n');\n");
  const result = await runCli(ADMIN, ['plugin', 'verify', plugin], { env: env() });
  t.equal(result.code, 3);
  t.equal(result.stdout, 'before exit\n', 'what was written before the exit, and nothing after it');
  t.equal(result.stderr, 'on stderr\n');
  t.equal(process.exitCode, undefined);
  t.pass('still running');
});

t.test("this process's own writes during a command pass through, uncaptured", async (t) => {
  const real = process.stdout.write;
  const passed: string[] = [];
  process.stdout.write = function (this: NodeJS.WriteStream, chunk: unknown, ...rest: unknown[]) {
    if (typeof chunk === 'string' && chunk.startsWith('# from the test')) passed.push(chunk);
    return (real as (...a: unknown[]) => boolean).call(this, chunk, ...rest);
  } as typeof process.stdout.write;
  const spy = process.stdout.write;
  try {
    const running = runCli(SVC, ['--help'], { env: env() });
    while (process.stdout.write === spy) await new Promise((resolve) => setImmediate(resolve));
    process.stdout.write('# from the test, while the command runs\n');
    const result = await running;
    t.equal(result.code, 0);
    t.same(passed, ['# from the test, while the command runs\n'], "reached this process's stream");
    t.notMatch(result.stdout, 'from the test', "and is not in the command's output");
    t.equal(process.stdout.write, spy, 'the write in place before the call is restored');
  } finally {
    process.stdout.write = real;
  }
});
