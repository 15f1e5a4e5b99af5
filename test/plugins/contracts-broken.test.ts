// Each suite catches a plugin with one flaw, and says which plugin broke which point.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { assertContract, ContractError, genericSampleSources, runContract, type ContractHarnesses } from '../../core/extension-points/contracts/index.ts';
import { servedStorageHarness } from '../../core/testing/route-server.ts';
import type { PluginKind } from '../../schemas/plugin.ts';
import { testLogger } from '../fixtures/db.ts';
import { pushPayload } from '../fixtures/github-payloads.ts';
import { brokenCustody, brokenGenericSource, brokenProvider, brokenSandbox, brokenScaler, brokenStorage } from '../fixtures/plugins/broken/index.ts';
import { createHmac } from 'node:crypto';
import type { SvcPlugin } from '../../core/plugins/index.ts';

const providerHarness: ContractHarnesses['provider'] = {
  sign: (body, secret) => ({ 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` }),
  push: { headers: { 'x-github-event': 'push', 'x-github-delivery': 'd-1', 'x-github-hook-installation-target-id': '12345' }, payload: pushPayload() },
  expected: { eventType: 'push', deliveryId: 'd-1', routingKey: 'github:12345', event: { type: 'push' } },
  source: { id: 's1', orgId: 'o', routingKey: 'github:12345', settings: { appId: '12345' }, credentials: { privateKey: 'x' } },
};

const cases: Array<{ kind: PluginKind; plugin: SvcPlugin; harness: ContractHarnesses[PluginKind]; point: string; reason: RegExp }> = [
  { kind: 'provider', plugin: brokenProvider as SvcPlugin, harness: providerHarness, point: 'verify: accepts a correctly signed body', reason: /signedBytes must be the exact body bytes/ },
  {
    kind: 'generic-source',
    plugin: brokenGenericSource as SvcPlugin,
    harness: { config: () => ({ sources: genericSampleSources() }), sources: genericSampleSources() },
    point: 'source config: each source comes back valid with its signature settings unchanged',
    reason: /signature settings of source-hmac: expected \{"mode":"hmac"/,
  },
  { kind: 'custody', plugin: brokenCustody as SvcPlugin, harness: {}, point: 'sign: a 64-byte raw r||s signature that jose verifies as ES256', reason: /signature length for a 0-byte payload: expected 64, got 7\d/ },
  {
    kind: 'storage',
    plugin: brokenStorage as SvcPlugin,
    harness: servedStorageHarness((dir, url) => ({ root: join(dir, 'root'), publicBaseUrl: url, urlSecret: randomBytes(32).toString('hex') })),
    point: 'get/head: a missing object is NotFound and null; a folder of keys is not an object',
    reason: /get\(missing\): expected it to fail with SVC_ERR_STORAGE_NOT_FOUND/,
  },
  { kind: 'sandbox', plugin: brokenSandbox as SvcPlugin, harness: { config: () => ({ bwrap: 'never' }), requireAvailable: true }, point: 'spawn: reports a non-zero exit code', reason: /exit code: expected 7, got 0/ },
  {
    kind: 'scaler',
    plugin: brokenScaler as SvcPlugin,
    harness: { running: async () => [], settleMs: 2000 },
    point: 'scale-up: starts a real agent with the mandatory labels and returns its id',
    reason: /agent ghost-\d+ never started \(waited 2000 ms\)/,
  },
];

for (const c of cases) {
  t.test(`a broken ${c.kind} plugin fails "${c.point}"`, { timeout: 600_000 }, async (t) => {
    const report = await runContract(c.kind, c.plugin, { logger: testLogger, ...c.harness } as never);
    t.equal(report.ok, false);
    const failed = report.results.find((r) => r.point === c.point);
    t.equal(failed?.status, 'failed', `the point "${c.point}" failed`);
    const prefix = `${c.kind} "${c.plugin.id}" fails contract point "${c.point}": `;
    t.ok(failed?.message?.startsWith(prefix), `the message names the plugin and the point: ${failed?.message}`);
    t.match(failed?.message?.slice(prefix.length), c.reason);
    const thrown = await assertContract(c.kind, c.plugin, { logger: testLogger, ...c.harness } as never, { only: [c.point] }).then(
      () => null,
      (error: unknown) => error,
    );
    t.ok(thrown instanceof ContractError, 'assertContract throws a ContractError');
    t.equal((thrown as ContractError).code, 'SVC_ERR_PLUGIN_CONTRACT');
    t.ok((thrown as ContractError).message.includes(prefix), 'its message names the plugin and the point');
  });
}

t.test('a plugin of another kind, or one that fails sign-in, fails the sign-in point and skips the rest', async (t) => {
  const report = await runContract('storage', brokenScaler as SvcPlugin, { logger: testLogger });
  t.equal(report.results[0]?.message, 'storage "broken-scaler" fails contract point "sign-in: passes every kernel sign-in phase": it is a scaler plugin, not a storage plugin');
  t.ok(report.results.slice(1).every((r) => r.status === 'skipped' && r.message === 'sign-in failed'));
  const missing = await runContract('storage', '/nonexistent/plugin.js', { logger: testLogger });
  t.match(missing.results[0]?.message, /^storage "\/nonexistent\/plugin.js" fails contract point "sign-in: passes every kernel sign-in phase": module \/nonexistent\/plugin.js could not be imported/);
});
