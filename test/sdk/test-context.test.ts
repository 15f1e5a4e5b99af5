import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createTestStepContext, ShellCommandError } from '../../sdk/index.ts';

t.test('ctx.$ runs a real program; interpolated values are single arguments', async (t) => {
  const repoRoot = await mkdtemp(join(tmpdir(), 'svc-ctx-'));
  t.teardown(() => rm(repoRoot, { recursive: true, force: true }));
  const { ctx, dispose } = createTestStepContext({ repoRoot });
  t.teardown(dispose);
  const hostile = 'a b; touch pwned && echo $HOME `id` | cat';
  const r = await ctx.$`${process.execPath} -e ${'process.stdout.write(JSON.stringify(process.argv.slice(1)))'} ${hostile} ${['x y', 2]}`;
  t.same(JSON.parse(r.stdout), [hostile, 'x y', '2']);
  t.equal(r.exitCode, 0);
  t.equal(existsSync(join(repoRoot, 'pwned')), false, 'no shell ran the metacharacters');
  const pwd = await ctx.$`pwd`;
  t.equal(pwd.stdout, repoRoot, 'runs in repoRoot');
});

t.test('non-zero exit rejects by default; reject: false resolves with the exit code', async (t) => {
  const { ctx, dispose } = createTestStepContext();
  t.teardown(dispose);
  const err = await ctx.$`${process.execPath} -e ${'process.stderr.write("boom"); process.exit(3)'}`.catch((e: unknown) => e);
  t.ok(err instanceof ShellCommandError);
  t.equal((err as ShellCommandError).code, 'SVC_ERR_STEP_COMMAND_FAILED');
  t.equal((err as ShellCommandError).exitCode, 3);
  t.equal((err as ShellCommandError).stderr, 'boom');
  const r = await ctx.$({ reject: false })`${process.execPath} -e ${'process.exit(4)'}`;
  t.equal(r.exitCode, 4);
  const missing = await ctx.$`definitely-not-a-program-svc`.catch((e: unknown) => e);
  t.ok(missing instanceof ShellCommandError, 'a program that cannot start rejects too');
  await t.rejects(ctx.$`echo ${{} as unknown as string}`, { code: 'SVC_ERR_STEP_SHELL_VALUE' });
  t.throws(() => (ctx.$ as unknown as (x: number) => unknown)(5), { code: 'SVC_ERR_STEP_SHELL_USAGE' });
});

t.test('setEnv and addPath apply to later commands', async (t) => {
  const bin = await mkdtemp(join(tmpdir(), 'svc-bin-'));
  t.teardown(() => rm(bin, { recursive: true, force: true }));
  await writeFile(join(bin, 'svc-hello'), '#!/bin/sh\necho "hello $GREETING_NAME"\n', { mode: 0o755 });
  const { ctx, dispose } = createTestStepContext({ env: { PRESET: 'p' } });
  t.teardown(dispose);
  t.equal(ctx.env['PRESET'], 'p');
  ctx.setEnv('GREETING_NAME', 'svc');
  ctx.addPath(bin);
  t.equal(ctx.env['GREETING_NAME'], 'svc');
  t.ok(ctx.env['PATH']?.startsWith(bin));
  t.equal((await ctx.$`svc-hello`).stdout, 'hello svc');
  t.throws(() => ctx.setEnv('BAD NAME', 'x'), { code: 'SVC_ERR_STEP_ENV_NAME' });
  t.throws(() => ctx.setEnv('OK', 1 as unknown as string), { code: 'SVC_ERR_STEP_ENV_VALUE' });
  t.throws(() => ctx.addPath('a:b'), { code: 'SVC_ERR_STEP_PATH' });
});

t.test('secrets: flat, by context, qualified, ambiguous; masked in the default log', async (t) => {
  const flat = createTestStepContext({ secrets: { flat: { TOKEN: 's3cret' } } });
  t.teardown(flat.dispose);
  t.equal(flat.ctx.secrets.get('TOKEN'), 's3cret');
  t.equal(flat.ctx.secrets.get('OTHER'), undefined);

  const byContext = createTestStepContext({ secrets: { contexts: { prod: { TOKEN: 'p', ONLY: 'o' }, staging: { TOKEN: 's' } } } });
  t.teardown(byContext.dispose);
  t.equal(byContext.ctx.secrets.get('prod:TOKEN'), 'p');
  t.equal(byContext.ctx.secrets.get('staging:TOKEN'), 's');
  t.equal(byContext.ctx.secrets.get('ONLY'), 'o');
  t.equal(byContext.ctx.secrets.get('nope:TOKEN'), undefined);
  t.throws(() => byContext.ctx.secrets.get('TOKEN'), { code: 'SVC_ERR_STEP_SECRET_AMBIGUOUS' });

  t.throws(() => createTestStepContext({ secrets: {} as never }), { code: 'SVC_ERR_SDK_TEST_SECRETS' });
  t.throws(() => createTestStepContext({ secrets: { flat: {}, contexts: {} } as never }), { code: 'SVC_ERR_SDK_TEST_SECRETS' });

  const written: string[] = [];
  const original = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => {
    written.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  try {
    flat.ctx.log.info(`token is ${flat.ctx.secrets.get('TOKEN')}`);
    flat.ctx.setSecretOutput('key', 'hidden-output');
    flat.ctx.log.error('value hidden-output', { v: 'hidden-output' });
  } finally {
    process.stderr.write = original;
  }
  t.same(written, ['[info] token is ***\n', '[error] value *** {"v":"***"}\n']);
  t.throws(() => flat.ctx.setSecretOutput('', 'x'), { code: 'SVC_ERR_STEP_SECRET_OUTPUT' });
});

t.test('inputs, matrix, outputs, custom $ and log', async (t) => {
  const lines: string[] = [];
  const fakeShell = (() => Promise.resolve({ stdout: 'fake', stderr: '', exitCode: 0 })) as never;
  const { ctx, dispose } = createTestStepContext({
    inputs: { env: 'prod', dryRun: true },
    matrix: { node: 24, os: 'linux' },
    stepOutputs: { build: { version: '1.2.3' } },
    jobOutputs: { compile: { artifact: 'a.tgz' } },
    $: fakeShell,
    log: { info: (m) => lines.push(`i:${m}`), warn: (m) => lines.push(`w:${m}`), error: (m) => lines.push(`e:${m}`) },
  });
  t.teardown(dispose);
  t.same(ctx.inputs, { env: 'prod', dryRun: true });
  t.equal(ctx.matrix.node, 24);
  t.same(ctx.outputsOf('build'), { version: '1.2.3' });
  t.throws(() => ctx.outputsOf('nope'), { code: 'SVC_ERR_STEP_NO_OUTPUTS' });
  t.same(ctx.jobOutputs('compile'), { artifact: 'a.tgz' });
  t.equal(ctx.jobOutputs('other'), undefined);
  t.equal((await ctx.$`anything`).stdout, 'fake');
  ctx.log.info('hi');
  ctx.log.warn('careful');
  t.same(lines, ['i:hi', 'w:careful']);
  t.equal(ctx.isTestRun, true);
  t.same(ctx.changedFiles, []);
  t.equal(ctx.event.type, 'test');
});

t.test('emit is recorded with a JSON copy of the payload', async (t) => {
  const { ctx, emitCalls, dispose } = createTestStepContext();
  t.teardown(dispose);
  const payload = { version: '1.0.0', nested: { n: 1 } };
  const r = await ctx.emit('release.ready', payload);
  payload.nested.n = 2;
  await ctx.emit('ping');
  t.same(emitCalls, [
    { name: 'release.ready', payload: { version: '1.0.0', nested: { n: 1 } } },
    { name: 'ping', payload: undefined },
  ]);
  t.equal(r.deliveryId, 'test-1');
  await t.rejects(ctx.emit('', {}), { code: 'SVC_ERR_STEP_EMIT_NAME' });
  await t.rejects(ctx.emit('bad name', {}), { code: 'SVC_ERR_STEP_EMIT_NAME' });
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  await t.rejects(ctx.emit('cyc', cyclic), { code: 'SVC_ERR_STEP_EMIT_PAYLOAD' });
  t.equal(emitCalls.length, 2, 'refused emits are not recorded');
});

t.test('mktemp and mktempFile are removed by dispose', async (t) => {
  const { ctx, dispose } = createTestStepContext();
  const dir = await ctx.mktemp();
  const file = await ctx.mktempFile({ suffix: '.json' });
  const other = await ctx.mktempFile();
  t.ok(existsSync(dir));
  t.ok(file.endsWith('.json'));
  t.equal(await readFile(file, 'utf8'), '');
  t.not(file, other);
  await writeFile(join(dir, 'inner.txt'), 'x');
  await t.rejects(ctx.mktempFile({ suffix: '/../x' }), { code: 'SVC_ERR_STEP_TEMP_SUFFIX' });
  await dispose();
  t.equal(existsSync(dir), false);
  t.equal(existsSync(file), false);
  t.equal(existsSync(other), false);
  await dispose();
  await t.rejects(ctx.mktemp(), { code: 'SVC_ERR_SDK_TEST_DISPOSED' });
});

t.test('orchestrator-backed APIs reject by default and accept stubs', async (t) => {
  const { ctx, dispose } = createTestStepContext();
  t.teardown(dispose);
  const code = 'SVC_ERR_SDK_ORCHESTRATOR_REQUIRED';
  await t.rejects(ctx.svc.oidc.token({ audience: 'sts' }), { code, message: /ctx\.svc\.oidc\.token/ });
  await t.rejects(ctx.cache.restore('k', { paths: ['node_modules'] }), { code });
  await t.rejects(ctx.cache.save('k', ['node_modules']), { code });
  await t.rejects(ctx.artifacts.upload('a', ['dist']), { code });
  await t.rejects(ctx.artifacts.download('a', 'out'), { code });
  await t.rejects(ctx.attestProvenance({ subjects: [{ path: 'dist/a.tgz' }] }), { code });

  const stubbed = createTestStepContext({
    orchestrator: { oidc: { token: async () => ({ deferred: true as const, code: 'unavailable' }) } },
  });
  t.teardown(stubbed.dispose);
  t.same(await stubbed.ctx.svc.oidc.token({ audience: 'x' }), { deferred: true, code: 'unavailable' });
  await t.rejects(stubbed.ctx.cache.save('k', []), { code });
});
