// `gitea` source provider: Gitea and Forgejo instances. An example of a provider that lives
// outside svc and is loaded from the module path named in the orchestrator's `plugins.modules`.
// It builds only against the public `svc/plugin` surface. The kernel checks signatures (two
// secrets while one rotates); this plugin tells it which header holds Gitea's digest.
import { definePlugin, type ProviderDeliveryHeaders, type RawDelivery, type SourceProviderExtensionPoint } from 'svc/plugin';
import { GiteaRepositoryApi } from './gitea-api.ts';
import { extractGiteaHeaders, giteaSignatureInput } from './headers.ts';
import { normalizeGiteaPayload } from './payload.ts';
import { GiteaProviderConfig, GiteaSourceSettings } from './settings.ts';

export { extractGiteaHeaders, giteaSignatureInput, HEADER_NAMES } from './headers.ts';
export { normalizeGiteaPayload } from './payload.ts';
export { GiteaRepositoryApi, LOCK_FILE_PATH } from './gitea-api.ts';
export { GiteaProviderConfig, GiteaSourceSettings, giteaSourceOf, type GiteaSource } from './settings.ts';

export const GITEA_PROVIDER_KIND = 'gitea';
/**
 * Gitea sends no hook or installation target id, so deliveries cannot say which source they
 * belong to: an org has one Gitea source, registered with target `*`, and the kernel's
 * `<kind>:*` fallback routes every Gitea delivery of the org to it.
 */
export const GITEA_ROUTING_KEY = `${GITEA_PROVIDER_KIND}:*`;

export const giteaProvider = definePlugin({
  id: 'gitea',
  kind: 'provider',
  version: '0.1.0',
  kernelRange: '^0.9.0',
  description: 'Gitea and Forgejo source provider: X-Gitea-Signature webhooks, contents and compare APIs, token checkout',
  configSchema: GiteaProviderConfig,
  create({ config, logger }): SourceProviderExtensionPoint {
    const api = new GiteaRepositoryApi({ config, logger });
    return {
      providerKind: GITEA_PROVIDER_KIND,
      sourceSettingsSchema: GiteaSourceSettings,
      routingKey: (_headers: ProviderDeliveryHeaders) => GITEA_ROUTING_KEY,
      extractHeaders: extractGiteaHeaders,
      signatureInput: giteaSignatureInput,
      normalize: (delivery: RawDelivery, payload: unknown) => normalizeGiteaPayload(GITEA_PROVIDER_KIND, delivery.headers.eventType, payload),
      fetchLockFile: (request) => api.fetchLockFile(request),
      readFile: (request) => api.readFile(request),
      changedFiles: (request) => api.changedFiles(request),
      checkoutCredentials: (request) => api.checkoutCredentials(request),
    };
  },
});

export default giteaProvider;
