// `github` source provider: a GitHub App. Deliveries carry GitHub's headers (or the spec's
// `X-Provider-*` equivalents); the routing key is `github:<app id>`; repository reads go
// through the REST API with installation tokens; run status goes back as check runs.
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { ProviderDeliveryHeaders, RawDelivery, SourceProviderExtensionPoint, WebhookHeaders } from '../../../core/extension-points/provider.ts';
import { normalizeGithubPayload } from '../shared/github-payload.ts';
import { GithubAppClient } from './app-client.ts';
import { GithubCheckRuns } from './check-runs.ts';
import { extractDeliveryHeaders, hubSignatureInput } from './headers.ts';
import { GithubHookDeliveries } from './hook-deliveries.ts';
import { GithubRepositoryApi } from './repository-api.ts';
import { GithubProviderConfig, GithubSourceSettings } from './settings.ts';

export { GithubAppClient, githubError, type InstallationToken, type GithubAppClientOptions } from './app-client.ts';
export { extractDeliveryHeaders, hubSignatureInput, HEADER_NAMES, type HeaderRules } from './headers.ts';
export { GithubRepositoryApi, LOCK_FILE_PATH } from './repository-api.ts';
export { GithubCheckRuns, checkRunBody, type CheckRunBody } from './check-runs.ts';
export {
  GithubProviderConfig,
  GithubSourceSettings,
  DEFAULT_API_BASE_URL,
  githubSourceOf,
  ownerAndRepo,
  type GithubSource,
} from './settings.ts';

export const GITHUB_PROVIDER_KIND = 'github';
const APP_ID = /^[1-9][0-9]{0,19}$/;

export const githubProvider = definePlugin({
  id: 'github',
  kind: 'provider',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'GitHub App source provider: GitHub webhooks, contents and compare APIs, installation tokens for checkout, check runs for run status',
  configSchema: GithubProviderConfig,
  create({ config, logger }): SourceProviderExtensionPoint {
    const client = new GithubAppClient({ logger, refreshMarginMs: config.tokenRefreshMarginMs, requestTimeoutMs: config.requestTimeoutMs });
    const api = new GithubRepositoryApi({ client, config, logger });
    const checkRuns = new GithubCheckRuns({ client, api, logger });
    const hookDeliveries = new GithubHookDeliveries(client);
    return {
      providerKind: GITHUB_PROVIDER_KIND,
      sourceSettingsSchema: GithubSourceSettings,
      extractHeaders: (headers: WebhookHeaders) =>
        extractDeliveryHeaders(headers, { targetId: APP_ID, targetIdMeaning: 'the GitHub App id (digits)' }),
      routingKey: (headers: ProviderDeliveryHeaders) => `${GITHUB_PROVIDER_KIND}:${headers.targetId ?? ''}`,
      signatureInput: hubSignatureInput,
      normalize: (delivery: RawDelivery, payload: unknown) => normalizeGithubPayload(GITHUB_PROVIDER_KIND, delivery.headers.eventType, payload),
      fetchLockFile: (request) => api.fetchLockFile(request),
      readFile: (request) => api.readFile(request),
      changedFiles: (request) => api.changedFiles(request),
      checkoutCredentials: (request) => api.checkoutCredentials(request),
      reportRunStatus: (request) => checkRuns.report(request),
      listDeliveryAttempts: ({ source, since }) => hookDeliveries.list(source, since),
      redeliver: ({ source, id }) => hookDeliveries.redeliver(source, id),
      close: () => client.clear(),
    };
  },
});

export default githubProvider;
