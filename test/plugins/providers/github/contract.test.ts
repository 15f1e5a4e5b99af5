// Both source providers (`github`, `git`) against the provider extension point: they sign in
// through the real plugin host (which checks the members), and answer the same questions the
// same way: header families, routing keys, signature input, normalized events, refusals.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createPluginHost, sourceProviderExtensionPoint, type SvcPlugin } from '../../../../core/plugins/index.ts';
import type { ProviderSource } from '../../../../core/extension-points/provider.ts';
import { loadConfig } from '../../../../kernel/services/config/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { gitProvider } from '../../../../plugins/providers/git/index.ts';
import { githubProvider } from '../../../../plugins/providers/github/index.ts';
import { NormalizedEvent } from '../../../../schemas/event.ts';
import { compileSchema } from '../../../../schemas/validate.ts';
import { pushPayload, SHA_A } from '../../../fixtures/github-payloads.ts';

const cacheDir = await mkdtemp(join(tmpdir(), 'svc-provider-contract-'));
t.teardown(() => rm(cacheDir, { recursive: true, force: true }));
const host = createPluginHost({ config: { 'provider:git': { cacheDir } } });
const summaries = await host.signInAll({ builtIns: [githubProvider, gitProvider] });
t.teardown(() => host.close());
const checkEvent = compileSchema(NormalizedEvent);

t.same(summaries.map((s) => [s.kind, s.id]), [['provider', 'github'], ['provider', 'git']], 'both sign in as providers');

const cases: Array<{ id: string; targetId: string; source: ProviderSource }> = [
  { id: 'github', targetId: '12345', source: { id: 's1', orgId: 'o', routingKey: 'github:12345', settings: { appId: '12345' }, credentials: { privateKey: 'x' } } },
  { id: 'git', targetId: '6f1c2b8e-0000-4000-8000-000000000001', source: { id: 's2', orgId: 'o', routingKey: 'git:x', settings: { remoteUrl: '/srv/x.git', repository: 'a/b' }, credentials: {} } },
];

for (const c of cases) {
  t.test(`${c.id} satisfies the provider extension point`, async (t) => {
    const provider = host.get('provider', c.id);
    for (const [member, type] of Object.entries(sourceProviderExtensionPoint.members)) {
      t.equal(typeof (provider as unknown as Record<string, unknown>)[member], type, member);
    }
    t.equal(provider.providerKind, c.id);
    t.ok(provider.sourceSettingsSchema, 'declares its source settings schema');
    t.doesNotThrow(() => compileSchema(provider.sourceSettingsSchema!));

    for (const family of ['x-github', 'x-provider']) {
      const headers = {
        [`${family}-event`]: 'push',
        [`${family}-delivery`]: 'delivery-1',
        [`${family}-hook-installation-target-id`]: c.targetId,
        [`${family}-hook-installation-target-type`]: 'integration',
        'x-hub-signature-256': `sha256=${'c'.repeat(64)}`,
      };
      const extracted = provider.extractHeaders(headers);
      if (!extracted.ok) throw new Error(extracted.message);
      t.equal(extracted.headers.eventType, 'push');
      t.equal(provider.routingKey(extracted.headers), `${c.id}:${c.targetId}`, `${family} routing key`);
      const body = Buffer.from(JSON.stringify(pushPayload()));
      const input = provider.signatureInput({ headers: extracted.headers, body });
      t.equal(input.signedBytes, body);
      t.equal(input.signature, 'c'.repeat(64));
      const event = provider.normalize({ headers: extracted.headers, body }, pushPayload());
      t.ok(checkEvent.check(event), 'normalized event matches schemas/event.ts');
      t.match(event, { provider: c.id, type: 'push', sha: SHA_A });
    }
    t.match(provider.extractHeaders({}), { ok: false, missing: 'X-GitHub-Event' });
    t.match(provider.extractHeaders({ 'x-provider-event': 'push', 'x-provider-delivery': 'd', 'x-provider-hook-installation-target-id': c.targetId, 'x-provider-hook-installation-target-type': 'repository' }), { ok: false });

    // Bad input is an input error, before any network or git work.
    await t.rejects(provider.fetchLockFile({ source: c.source, repository: { id: '1', fullName: 'a/b' }, sha: 'main' }), { name: 'InputError' });
    await t.rejects(provider.changedFiles({ source: c.source, repository: { id: '1', fullName: 'a/b' }, base: '--output=/tmp/x', head: SHA_A }), { name: 'InputError' });
  });
}

t.test('the orchestrator composition signs both providers in', async (t) => {
  const { config } = await loadConfig({ env: {}, cwd: cacheDir });
  const selection = orchestratorPlugins({ config, publicUrl: 'http://127.0.0.1:7700', dataDir: cacheDir, derivedSecret: () => 'x'.repeat(43) });
  const ids = selection.builtIns.map((p: SvcPlugin) => `${p.kind}:${p.id}`);
  t.ok(ids.includes('provider:github') && ids.includes('provider:git'));
  t.same(selection.config['provider:git'], { cacheDir: join(cacheDir, 'git-cache') });
  const composed = createPluginHost({ config: selection.config });
  await composed.signIn(githubProvider);
  await composed.signIn(gitProvider);
  t.equal(composed.get('provider', 'git').providerKind, 'git');
  await composed.close();
});
