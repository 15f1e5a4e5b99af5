// svc dev's persisted state and output: state.json round trip, damaged files refused with a
// clear line (and left as they are), the hook secret generated once, the env file for
// `svc runs`, and the reporter's three output shapes.
import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import t from 'tap';
import { createReporter } from '../../../cli/dev/reporter.ts';
import { devPaths, hookSecret, readState, writeCliEnv, writeState } from '../../../cli/dev/state.ts';
import { devBaseEnv } from '../../../cli/dev/index.ts';

const root = await mkdtemp(join(tmpdir(), 'svc-dev-state-'));
t.teardown(() => rm(root, { recursive: true, force: true }));

t.test('state: fresh, round trip, 0600', async (t) => {
  const paths = devPaths(join(root, 'a'));
  t.same(await readState(paths, 'dev'), { version: 1, orgId: 'dev', sources: {} });
  await writeState(paths, { version: 1, orgId: 'dev', sources: { '/repo': 'id-1' }, platformToken: 'svcp_x', agentToken: 'svcat_y', pat: 'svcpat_z' });
  t.same(await readState(paths, 'dev'), { version: 1, orgId: 'dev', sources: { '/repo': 'id-1' }, platformToken: 'svcp_x', agentToken: 'svcat_y', pat: 'svcpat_z' });
  t.equal((await stat(paths.stateFile)).mode & 0o777, 0o600);
});

t.test('state: damaged files are refused with a clear error and left alone', async (t) => {
  const paths = devPaths(join(root, 'b'));
  await mkdir(paths.stateDir, { recursive: true });
  for (const text of ['{not json', '[]', JSON.stringify({ version: 2, orgId: 'dev', sources: {} }), JSON.stringify({ version: 1, orgId: 'dev', sources: { a: 1 } }), JSON.stringify({ version: 1, orgId: 'dev', sources: {}, extra: true })]) {
    await writeFile(paths.stateFile, text);
    await t.rejects(readState(paths, 'dev'), { code: 'SVC_ERR_DEV_STATE', message: /state\.json .*(not JSON|not valid).*remove it/ }, text);
    t.equal(await readFile(paths.stateFile, 'utf8'), text, 'unchanged');
  }
});

t.test('hook secret: generated once, reused, regenerated when too short', async (t) => {
  const paths = devPaths(join(root, 'c'));
  const first = await hookSecret(paths);
  t.equal(first.created, true);
  t.match(first.secret, /^[0-9a-f]{64}$/);
  t.equal((await stat(paths.hookSecretFile)).mode & 0o777, 0o600);
  t.same(await hookSecret(paths), { secret: first.secret, created: false });
  await writeFile(paths.hookSecretFile, 'short\n');
  const again = await hookSecret(paths);
  t.equal(again.created, true);
  t.not(again.secret, 'short');
});

t.test('env file for svc runs: quoted, 0600', async (t) => {
  const paths = devPaths(join(root, 'd'));
  await writeCliEnv(paths, { platformUrl: 'http://127.0.0.1:7800', token: "svcpat_a'b", org: 'dev' });
  const text = await readFile(paths.cliEnvFile, 'utf8');
  t.match(text, /export SVC_PLATFORM_URL='http:\/\/127\.0\.0\.1:7800'/);
  t.match(text, /export SVC_TOKEN='svcpat_a'\\''b'/);
  t.match(text, /export SVC_ORG='dev'/);
  t.equal((await stat(paths.cliEnvFile)).mode & 0o777, 0o600);
});

t.test('the roles never inherit SVC_* settings', async (t) => {
  t.same(devBaseEnv({ PATH: '/bin', SVC_DATABASE_URL: 'postgres://elsewhere', SVC_PLATFORM_TOKEN: 'x', HOME: '/h' }), { PATH: '/bin', HOME: '/h' });
});

function collect(stream: PassThrough): () => string {
  let text = '';
  stream.on('data', (d: Buffer) => (text += d.toString()));
  return () => text;
}

t.test('reporter: JSON lines, quiet progress off a TTY, spinner on a TTY', async (t) => {
  const run = { event: 'run', runId: 'r1', workflow: 'ci', status: 'completed', reason: null, sha: 'abcdef0123', ref: 'refs/heads/main' } as const;

  const jsonOut = new PassThrough();
  const jsonErr = new PassThrough();
  const jsonText = collect(jsonOut);
  const jsonErrText = collect(jsonErr);
  const json = createReporter({ json: true, stdout: jsonOut, stderr: jsonErr });
  t.equal(await json.task('database', 'starting', async () => 42), 42);
  json.emit(run);
  json.emit({ event: 'error', code: 'SVC_ERR_TEST_X', message: 'broken' });
  const lines = jsonText().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.match(lines[0], { event: 'progress', phase: 'database', status: 'done', message: 'starting' });
  t.same(lines[1], run);
  t.same(lines[2], { event: 'error', code: 'SVC_ERR_TEST_X', message: 'broken' });
  t.equal(jsonErrText(), 'SVC_ERR_TEST_X: broken\n', 'errors also on stderr as one line');

  const plainOut = new PassThrough();
  const plainErr = new PassThrough();
  const plainText = collect(plainOut);
  const plainErrText = collect(plainErr);
  const plain = createReporter({ json: false, stdout: plainOut, stderr: plainErr });
  await plain.task('database', 'starting', async () => undefined);
  plain.emit(run);
  plain.emit({ event: 'log', runId: 'r1', jobId: 'j', job: 'build', step: 'version', stream: 'stdout', text: 'hello', at: '' });
  await t.rejects(plain.task('relay', 'starting the relay', async () => Promise.reject(new Error('nope'))), /nope/);
  t.equal(plainErrText(), '', 'no progress off a terminal');
  t.equal(plainText(), 'run r1 ci: completed\n  build › version | hello\n', 'plain data lines, no colour');

  const ttyOut = new PassThrough();
  const ttyErr = new PassThrough();
  const ttyErrText = collect(ttyErr);
  // The task's time on an injected clock: 1.23 s pass inside it, however long it really takes.
  let clock = 50_000;
  const tty = createReporter({ json: false, stdout: ttyOut, stderr: ttyErr, tty: true, now: () => clock });
  await tty.task('database', 'starting PostgreSQL', async () => void (clock += 1_230));
  tty.close();
  t.match(ttyErrText(), /starting PostgreSQL…/, 'spinner text');
  t.match(ttyErrText(), /✓.* starting PostgreSQL .*\(1\.2s\)/, 'done line with the time');
});
