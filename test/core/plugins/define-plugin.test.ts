import t from 'tap';
import { Type } from 'typebox';
import { definePlugin, isPlugin, PLUGIN_BRAND } from '../../../core/plugins/define-plugin.ts';

t.test('definePlugin brands with a non-enumerable registry symbol and freezes', async (t) => {
  const plugin = definePlugin({
    id: 'brand-check',
    kind: 'storage',
    version: '1.0.0',
    kernelRange: '*',
    description: 'brand',
    configSchema: Type.Object({}),
    create: () => ({}) as never,
  });
  t.equal(PLUGIN_BRAND, Symbol.for('svc.plugin'));
  t.equal(plugin[PLUGIN_BRAND], true);
  t.ok(isPlugin(plugin));
  t.notOk(Object.keys(plugin).some((k) => k.includes('svc.plugin')));
  t.notOk(Object.getOwnPropertyDescriptor(plugin, PLUGIN_BRAND)?.enumerable);
  t.ok(Object.isFrozen(plugin));
  t.notOk(isPlugin({ ...plugin }), 'a copy is not a plugin');
  t.notOk(isPlugin(null));
  t.notOk(isPlugin('plugin'));
  t.notOk(isPlugin({ [Symbol.for('svc.plugin')]: 'yes' }), 'brand must be exactly true');
  t.equal(JSON.stringify(plugin).includes('svc.plugin'), false);
});
