// Registry API of the plugin host: lookups by kind, selection, fail-closed behaviour, close order.
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { Counter, Registry } from 'prom-client';
import t from 'tap';
import { Type } from 'typebox';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import { PluginHost, createPluginHost } from '../../../core/plugins/host.ts';
import type { ScalerExtensionPoint } from '../../../core/extension-points/scaler.ts';

const fixtures = fileURLToPath(new URL('../../fixtures/plugins/', import.meta.url));

function scaler(id: string, log: string[], options: { failClose?: boolean } = {}) {
  return definePlugin({
    id,
    kind: 'scaler',
    version: '1.0.0',
    kernelRange: '^0.9.0',
    description: `scaler ${id}`,
    configSchema: Type.Object({}),
    create: (ctx): ScalerExtensionPoint => {
      new Counter({ name: `fixture_${id.replace(/-/g, '_')}_total`, help: 'fixture', registers: [ctx.metrics] }).inc();
      ctx.logger.info({ marker: id }, 'created');
      return {
        scaleUp: async () => ({ agentIds: [id] }),
        scaleDown: async () => ({ stopped: [] }),
        capacity: async () => ({ current: 0, pending: 0, max: 1 }),
        close: async () => {
          log.push(id);
          if (options.failClose === true) throw new Error(`${id} will not close`);
        },
      };
    },
  });
}

t.test('get, only, select, list and close in reverse order', async (t) => {
  const closed: string[] = [];
  const metrics = new Registry();
  const lines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
  const host = createPluginHost({ baseDir: fixtures, metrics, logger, selection: { scaler: 'beta' } });
  await host.signInAll({ builtIns: [scaler('alpha', closed), scaler('beta', closed)], modules: ['./good-storage.ts'] });

  t.same(
    host.list().map((p) => [p.kind, p.id, p.builtIn]),
    [
      ['scaler', 'alpha', true],
      ['scaler', 'beta', true],
      ['storage', 'fixture-memory', false],
    ],
  );
  t.same(await host.get('scaler', 'alpha').scaleUp({ mandatoryLabels: [], count: 1 }), { agentIds: ['alpha'] });
  t.same(await host.select('scaler').scaleUp({ mandatoryLabels: [], count: 1 }), { agentIds: ['beta'] }, 'configured selection');
  t.same(await host.select('scaler', 'alpha').scaleUp({ mandatoryLabels: [], count: 1 }), { agentIds: ['alpha'] });
  t.ok(host.select('storage'), 'no selection and one plugin: the only one');
  t.ok(host.has('storage', 'fixture-memory'));
  t.notOk(host.has('storage', 'nope'));

  t.throws(() => host.only('scaler'), { code: 'SVC_ERR_PLUGIN_AMBIGUOUS', message: /several scaler plugins are signed in \(alpha, beta\)/ });
  t.throws(() => host.get('scaler', 'gamma'), { code: 'SVC_ERR_PLUGIN_NOT_FOUND', message: /no scaler plugin "gamma" is signed in \(signed in: alpha, beta\)/ });
  t.throws(() => host.only('custody'), { code: 'SVC_ERR_PLUGIN_NOT_FOUND', message: /no custody plugin is signed in/ });
  t.throws(() => host.select('custody', 'db'), { code: 'SVC_ERR_PLUGIN_NOT_FOUND' });

  t.match(await metrics.metrics(), /fixture_alpha_total 1/, 'plugins register on the kernel registry');
  const created = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['msg'] === 'created');
  t.same(created.map((l) => [l['plugin'], l['marker']]), [['alpha', 'alpha'], ['beta', 'beta']], 'child logger per plugin');

  await host.close();
  t.same(closed, ['beta', 'alpha'], 'reverse sign-in order');
  t.same(host.list(), []);
  await host.close();
  t.same(closed, ['beta', 'alpha'], 'close is idempotent');
  await t.rejects(host.signIn(scaler('late', closed)), { code: 'SVC_ERR_PLUGIN_HOST_CLOSED' });
  t.throws(() => host.get('scaler', 'alpha'), { code: 'SVC_ERR_PLUGIN_HOST_CLOSED' });
});

t.test('close calls every close even when one fails, then reports the failure', async (t) => {
  const closed: string[] = [];
  const host = new PluginHost();
  await host.signIn(scaler('one', closed));
  await host.signIn(scaler('two', closed, { failClose: true }));
  await host.signIn(scaler('three', closed));
  await t.rejects(host.close(), { code: 'SVC_ERR_PLUGIN_CLOSE', message: /scaler:two: two will not close/ });
  t.same(closed, ['three', 'two', 'one']);
});

t.test('fail closed: after a failed sign-in the host hands out nothing', async (t) => {
  const closed: string[] = [];
  const host = new PluginHost({ baseDir: fixtures });
  await host.signIn(scaler('fine', closed));
  await t.rejects(host.signIn('./create-throws.ts'), { code: 'SVC_ERR_PLUGIN_SIGN_IN' });
  t.equal(host.failure?.phase, 'create');
  t.throws(() => host.get('scaler', 'fine'), { code: 'SVC_ERR_PLUGIN_HOST_FAILED', message: /plugin "broken-kms" \(custody\) failed sign-in at phase "create"/ });
  t.throws(() => host.only('scaler'), { code: 'SVC_ERR_PLUGIN_HOST_FAILED' });
  await host.close();
  t.same(closed, ['fine']);
});

t.test('signInAll closes what it created when a later plugin fails', async (t) => {
  const closed: string[] = [];
  const host = new PluginHost({ baseDir: fixtures });
  await t.rejects(host.signInAll({ builtIns: [scaler('first', closed)], modules: ['./good-storage.ts', './wrong-shape.ts'] }), {
    phase: 'shape',
    message: /plugin "half-storage" \(storage\)/,
  });
  t.same(closed, ['first']);
  t.same(host.list(), []);
});

t.test('host options are checked', async (t) => {
  t.throws(() => new PluginHost({ createTimeoutMs: 0 }), { code: 'SVC_ERR_PLUGIN_HOST_OPTIONS' });
  t.throws(() => new PluginHost({ createTimeoutMs: 1.5 }), { code: 'SVC_ERR_PLUGIN_HOST_OPTIONS' });
});

t.test('closing the host aborts each plugin signal', async (t) => {
  let signal: AbortSignal | undefined;
  const host = new PluginHost();
  await host.signIn(
    definePlugin({
      id: 'watcher',
      kind: 'scaler',
      version: '1.0.0',
      kernelRange: '*',
      description: 'keeps its signal',
      configSchema: Type.Object({}),
      create: (ctx) => {
        signal = ctx.signal;
        return { scaleUp: async () => ({ agentIds: [] }), scaleDown: async () => ({ stopped: [] }), capacity: async () => ({ current: 0, pending: 0, max: 0 }) };
      },
    }),
  );
  t.equal(signal?.aborted, false);
  await host.close();
  t.equal(signal?.aborted, true);
});
