// Sign-in phases against real fixture modules: each failure names the plugin and the phase, and
// a failing plugin is never registered.
import { verify as verifySignature, createPublicKey, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { PluginHost } from '../../../core/plugins/host.ts';
import { PluginSignInError } from '../../../core/plugins/errors.ts';
import { DEFAULT_CREATE_TIMEOUT_MS } from '../../../core/plugins/sign-in.ts';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import { Type } from 'typebox';
import { seenConfigs } from '../../fixtures/plugins/good-storage.ts';
import { state as hangState } from '../../fixtures/plugins/create-hangs.ts';
import { state as shapeState } from '../../fixtures/plugins/wrong-shape.ts';
import * as futureKernel from '../../fixtures/plugins/future-kernel.ts';

const fixtures = fileURLToPath(new URL('../../fixtures/plugins/', import.meta.url));

function newHost(options: ConstructorParameters<typeof PluginHost>[0] = {}): PluginHost {
  return new PluginHost({ baseDir: fixtures, ...options });
}

async function signInFails(t: Test, host: PluginHost, subject: Parameters<PluginHost['signIn']>[0], expected: { name: string; phase: string; kind?: string; reason: RegExp }) {
  const error = await host.signIn(subject).then(
    () => null,
    (e: unknown) => e,
  );
  t.type(error, PluginSignInError, 'a PluginSignInError');
  const e = error as PluginSignInError;
  t.equal(e.code, 'SVC_ERR_PLUGIN_SIGN_IN');
  t.equal(e.phase, expected.phase);
  const label = expected.kind === undefined ? `plugin "${expected.name}"` : `plugin "${expected.name}" (${expected.kind})`;
  t.ok(e.message.startsWith(`${label} failed sign-in at phase "${expected.phase}": `), `message names plugin and phase: ${e.message}`);
  t.match(e.message, expected.reason);
  return e;
}

t.test('no brand: stops at export', async (t) => {
  const host = newHost();
  await signInFails(t, host, './no-brand.ts', { name: './no-brand.ts', phase: 'export', reason: /not a plugin: make it with definePlugin/ });
  t.same(host.list(), [], 'nothing registered');
  // A plain object passed by a composition root is refused the same way.
  const plain = { id: 'plain', kind: 'storage' } as never;
  await signInFails(t, newHost(), plain, { name: 'plain', phase: 'export', reason: /not a plugin/ });
});

t.test('no default export: stops at export', async (t) => {
  await signInFails(t, newHost(), './no-default.ts', { name: './no-default.ts', phase: 'export', reason: /no default export/ });
});

t.test('bad manifest: stops at manifest, listing each bad field', async (t) => {
  const host = newHost();
  const e = await signInFails(t, host, './bad-manifest.ts', { name: 'Bad_Plugin', phase: 'manifest', reason: /: id: must be kebab-case, lower-case letters and digits \(e.g. "aws-kms"\); version: must be a semver version \(e.g. "1.2.3"\)$/ });
  t.equal(e.details?.['modulePath'], `${fixtures}bad-manifest.ts`);
  t.same(host.list(), []);
});

t.test('bad manifest from a built-in: unknown kind and bad kernel range', async (t) => {
  const base = { id: 'x', version: '1.0.0', description: 'x', configSchema: Type.Object({}), create: () => ({}) as never };
  await signInFails(t, newHost(), definePlugin({ ...base, kind: 'database' as never, kernelRange: '*' }), {
    name: 'x',
    phase: 'manifest',
    reason: /kind: must be one of provider, generic-source, custody, sandbox, storage, scaler/,
  });
  await signInFails(t, newHost(), definePlugin({ ...base, kind: 'storage', kernelRange: 'not a range' }), {
    name: 'x',
    phase: 'manifest',
    reason: /kernelRange: "not a range" is not a semver range/,
  });
  await signInFails(t, newHost(), definePlugin({ ...base, kind: 'storage', kernelRange: '*', create: 'nope' } as never), {
    name: 'x',
    phase: 'manifest',
    reason: /create: must be a function/,
  });
  await signInFails(t, newHost(), definePlugin({ ...base, kind: 'storage', kernelRange: '*', dependencies: [{ kind: 'db' }] } as never), {
    name: 'x',
    phase: 'manifest',
    reason: /dependencies\.0\.kind/,
  });
});

t.test('duplicate id: the second stops at unique and the first keeps serving', async (t) => {
  const host = newHost();
  await host.signIn('./good-storage.ts');
  await signInFails(t, host, './duplicate-memory.ts', { name: 'fixture-memory', kind: 'storage', phase: 'unique', reason: /already signed in/ });
  t.same(
    host.list().map((p) => [p.kind, p.id, p.version]),
    [['storage', 'fixture-memory', '2.0.0']],
  );
  await host.close();
});

t.test('duplicate id signed in concurrently: exactly one wins', async (t) => {
  const host = newHost();
  const results = await Promise.allSettled([host.signIn('./good-storage.ts'), host.signIn('./duplicate-memory.ts')]);
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  t.equal((rejected.reason as PluginSignInError).phase, 'unique');
  t.equal(host.list().length, 1);
  await host.close();
});

t.test('kernel range unmet: stops at kernel-range before create runs', async (t) => {
  const host = newHost();
  await signInFails(t, host, './future-kernel.ts', {
    name: 'future',
    kind: 'scaler',
    phase: 'kernel-range',
    reason: /kernel 0\.9\.0 does not satisfy the plugin's kernelRange ">=2\.0\.0"/,
  });
  t.equal(futureKernel.created, 0, 'create never ran');
  // The same plugin signs in on a kernel it supports.
  const newer = newHost({ kernelVersion: '2.1.0' });
  await newer.signIn('./future-kernel.ts');
  t.equal(futureKernel.created, 1);
  await newer.close();
});

t.test('bad config: stops at config with the failing path', async (t) => {
  const host = newHost();
  await signInFails(t, host, './needs-root.ts', { name: 'fs-x', kind: 'storage', phase: 'config', reason: /: root: is required$/ });
  t.same(host.list(), []);
  const typed = newHost({ config: { 'storage:fs-x': { root: 7, other: true } } });
  await signInFails(t, typed, './needs-root.ts', { name: 'fs-x', kind: 'storage', phase: 'config', reason: /other: unknown field/ });
  const ok = newHost({ config: { 'storage:fs-x': { root: '/srv' } } });
  await ok.signIn('./needs-root.ts');
  await ok.close();
});

t.test('create timeout: stops at create and aborts the plugin signal', async (t) => {
  const host = newHost({ createTimeoutMs: 150 });
  await signInFails(t, host, './create-hangs.ts', {
    name: 'slowpoke',
    kind: 'custody',
    phase: 'create',
    reason: /create did not resolve within 150 ms/,
  });
  // The reason names the limit that fired: the host's 150 ms, not the default.
  t.equal(DEFAULT_CREATE_TIMEOUT_MS, 10_000, 'the default limit is another one (10 s)');
  t.equal(hangState.aborted, true, 'ctx.signal was aborted');
  t.same(host.list(), []);
});

t.test('create throws: stops at create with the cause', async (t) => {
  const host = newHost();
  const e = await signInFails(t, host, './create-throws.ts', {
    name: 'broken-kms',
    kind: 'custody',
    phase: 'create',
    reason: /create threw: cannot reach the key service/,
  });
  t.match((e.cause as Error).message, /cannot reach the key service/);
});

t.test('missing module path: stops at resolve naming the path', async (t) => {
  const host = newHost();
  await signInFails(t, host, './does-not-exist.ts', {
    name: './does-not-exist.ts',
    phase: 'resolve',
    reason: new RegExp(`module not found at ${fixtures}does-not-exist\\.ts`),
  });
  await signInFails(t, newHost(), '', { name: '', phase: 'resolve', reason: /module path is empty/ });
  await signInFails(t, newHost(), './', { name: './', phase: 'resolve', reason: /is not a file/ });
  await signInFails(t, newHost(), './throws-on-import.ts', {
    name: './throws-on-import.ts',
    phase: 'resolve',
    reason: /could not be imported: fixture module refuses to load/,
  });
});

t.test('wrong shape: stops at shape naming the missing members, and the instance is closed', async (t) => {
  const host = newHost();
  await signInFails(t, host, './wrong-shape.ts', {
    name: 'half-storage',
    kind: 'storage',
    phase: 'shape',
    reason: /lacks required members: get \(function, got string\), head \(function, missing\), delete/,
  });
  t.equal(shapeState.closed, true);
  t.same(host.list(), []);
  const nothing = definePlugin({
    id: 'nothing',
    kind: 'sandbox',
    version: '1.0.0',
    kernelRange: '*',
    description: 'resolves to undefined',
    configSchema: Type.Object({}),
    create: () => undefined as never,
  });
  await signInFails(t, newHost(), nothing, { name: 'nothing', kind: 'sandbox', phase: 'shape', reason: /create resolved to undefined/ });
});

t.test('dependencies: must be signed in first, and only declared ones are reachable', async (t) => {
  const early = newHost();
  await signInFails(t, early, './needs-storage.ts', {
    name: 'storage-backed',
    kind: 'scaler',
    phase: 'dependencies',
    reason: /needs storage:fixture-memory signed in before it/,
  });

  const host = newHost();
  await host.signInAll({ modules: ['./good-storage.ts', './needs-storage.ts'] });
  await host.only('scaler').scaleUp({ mandatoryLabels: ['linux'], count: 3 });
  const body = await host.get('storage', 'fixture-memory').get('scaler/last');
  t.equal(Buffer.concat(await body.toArray()).toString(), '3');

  const sneaky = definePlugin({
    id: 'sneaky',
    kind: 'scaler',
    version: '1.0.0',
    kernelRange: '*',
    description: 'reaches for storage without declaring it',
    configSchema: Type.Object({}),
    create: (ctx) => ctx.dependency('storage', 'fixture-memory') as never,
  });
  const other = newHost();
  await other.signIn('./good-storage.ts');
  await signInFails(t, other, sneaky, { name: 'sneaky', kind: 'scaler', phase: 'create', reason: /without declaring it in dependencies/ });
  await host.close();
  await other.close();
});

t.test('a good plugin of each of the six kinds signs in and works', async (t) => {
  const host = newHost();
  const signed = await host.signInAll({
    modules: ['./good-provider.ts', './good-generic-source.ts', './good-custody.ts', './good-sandbox.ts', './good-storage.ts', './good-scaler.ts'],
  });
  t.same(
    signed.map((p) => `${p.kind}:${p.id}`),
    [
      'provider:fixture-forge',
      'generic-source:fixture-generic',
      'custody:fixture-memory-key',
      'sandbox:fixture-process',
      'storage:fixture-memory',
      'scaler:fixture-counter',
    ],
  );
  t.ok(signed.every((p) => p.builtIn === false && p.modulePath?.startsWith(fixtures)));

  const provider = host.only('provider');
  const extracted = provider.extractHeaders({ 'x-provider-event': 'push', 'x-provider-delivery': 'd-1', 'x-hub-signature-256': 'sha256=ab' });
  t.same(extracted, { ok: true, headers: { eventType: 'push', deliveryId: 'd-1', signature: 'sha256=ab' } });
  t.equal(provider.routingKey({ eventType: 'push', deliveryId: 'd-1' }), 'fixture-forge:42');
  t.same(provider.extractHeaders({}), { ok: false, missing: 'X-Provider-Event', message: 'no event type' });

  const generic = host.only('generic-source');
  const settings = await generic.sourceConfig('org-1', 'alerts');
  t.ok(settings);
  const delivery = { orgId: 'org-1', sourceId: 'alerts', headers: {}, body: new Uint8Array(), payload: { event: { type: 'deploy' } }, remoteAddress: '127.0.0.1' };
  t.equal(generic.eventType(settings!, delivery), 'deploy');
  t.equal(await generic.sourceConfig('org-1', 'nope'), null);

  const custody = host.only('custody');
  const jwk = await custody.getPublicJwk();
  t.equal(jwk.kid, await custody.keyId());
  const message = randomBytes(100);
  const signature = await custody.sign(message);
  t.equal(signature.length, 64, 'JOSE raw r||s');
  t.ok(verifySignature('sha256', message, { key: createPublicKey({ key: jwk, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, signature));

  const sandbox = host.only('sandbox');
  t.same(await sandbox.available(), { available: true });
  const workspace = await sandbox.prepareWorkspace({ jobId: 'job1' });
  // A shell metacharacter argument arrives intact: argv is never a shell string.
  const hostile = 'a; rm -rf / $(id) `id` | cat';
  const child = await sandbox.spawn({
    workspace,
    argv: [process.execPath, '-e', 'process.stdout.write(JSON.stringify([process.argv[1], process.cwd(), process.env.ONLY]))', hostile],
    env: { ONLY: 'yes' },
    cwd: workspace.dir,
  });
  const out = Buffer.concat(await child.stdout.toArray()).toString();
  t.same(await child.exited, { code: 0, signal: null });
  t.same(JSON.parse(out), [hostile, workspace.dir, 'yes']);
  const sleeper = await sandbox.spawn({ workspace, argv: [process.execPath, '-e', 'setInterval(() => {}, 1000)'], env: {}, cwd: workspace.dir });
  t.same(await sandbox.kill(sleeper, { graceMs: 2000 }), { code: null, signal: 'SIGTERM' });
  await sandbox.releaseWorkspace(workspace);

  const scaler = host.only('scaler');
  t.same(await scaler.scaleUp({ mandatoryLabels: ['linux'], count: 5 }), { agentIds: ['agent-1', 'agent-2'] });
  t.same(await scaler.capacity(), { current: 2, pending: 0, max: 2 });

  await host.close();
  t.same(host.list(), []);
});

t.test('config defaults are applied to a copy of the slice, and the result is frozen', async (t) => {
  const slice = { label: 'cache' };
  const host = newHost({ config: { 'storage:fixture-memory': slice } });
  seenConfigs.length = 0;
  await host.signIn('./good-storage.ts');
  t.same(seenConfigs, [{ label: 'cache', limits: { maxObjects: 100 } }]);
  t.same(slice, { label: 'cache' }, 'caller config untouched');
  t.ok(Object.isFrozen(seenConfigs[0]) && Object.isFrozen((seenConfigs[0] as { limits: object }).limits));
  await host.close();

  seenConfigs.length = 0;
  const empty = newHost();
  await empty.signIn('./good-storage.ts');
  t.same(seenConfigs, [{ label: 'mem', limits: { maxObjects: 100 } }], 'no slice at all: all defaults');
  await empty.close();
});
