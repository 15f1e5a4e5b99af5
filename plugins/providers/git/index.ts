// `git` source provider: any remote the git program can fetch (file, ssh, https, plain paths).
// Deliveries are GitHub-shaped pushes sent by `svc hook post-receive` (or any sender of the same
// shape); the routing key is `git:<source id>` from X-Provider-Hook-Installation-Target-ID. Lock
// files and changed files are read with git itself, from a bare mirror per source.
import { definePlugin } from '../../../core/plugins/define-plugin.ts';
import type { ProviderDeliveryHeaders, RawDelivery, SourceProviderExtensionPoint, WebhookHeaders } from '../../../core/extension-points/provider.ts';
import { extractDeliveryHeaders, hubSignatureInput } from '../github/headers.ts';
import { normalizeGithubPayload } from '../shared/github-payload.ts';
import { GitMirrors } from './mirror.ts';
import { GitProviderConfig, GitSourceSettings, gitSourceOf } from './settings.ts';

export { GitMirrors, LOCK_FILE_PATH } from './mirror.ts';
export { runGit, firstLine, type GitRunOptions, type GitResult } from './git-command.ts';
export { GitProviderConfig, GitSourceSettings, gitSourceOf, remoteUrlProblem, checkSha, fetchableRef, type GitSource } from './settings.ts';

export const GIT_PROVIDER_KIND = 'git';
/** A source id (the orchestrator's are UUIDs). */
const SOURCE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const gitProvider = definePlugin({
  id: 'git',
  kind: 'provider',
  version: '0.9.0',
  kernelRange: '^0.9.0',
  description: 'Plain git source provider: any fetchable remote; pushes arrive from `svc hook post-receive`',
  configSchema: GitProviderConfig,
  create({ config, logger }): SourceProviderExtensionPoint {
    const mirrors = new GitMirrors({ config, logger });
    return {
      providerKind: GIT_PROVIDER_KIND,
      sourceSettingsSchema: GitSourceSettings,
      extractHeaders: (headers: WebhookHeaders) =>
        extractDeliveryHeaders(headers, { targetId: SOURCE_ID, targetIdMeaning: 'the source id (svc.sourceId of the hook)' }),
      routingKey: (headers: ProviderDeliveryHeaders) => `${GIT_PROVIDER_KIND}:${headers.targetId ?? ''}`,
      signatureInput: hubSignatureInput,
      normalize: (delivery: RawDelivery, payload: unknown) => normalizeGithubPayload(GIT_PROVIDER_KIND, delivery.headers.eventType, payload),
      fetchLockFile: async ({ source, sha, ref }) => mirrors.readLockFile(gitSourceOf(source), sha, ref),
      readFile: async ({ source, sha, path }) => mirrors.readFile(gitSourceOf(source), sha, path),
      changedFiles: async ({ source, base, head }) => mirrors.changedFiles(gitSourceOf(source), base, head),
      close: () => mirrors.close(),
      checkoutCredentials: async ({ source }) => {
        const git = gitSourceOf(source);
        // Credentials only for http(s): a token is never handed out alongside an ssh or file remote.
        if (git.token !== undefined && /^https?:\/\//.test(git.remoteUrl)) {
          return { cloneUrl: git.remoteUrl, username: git.username ?? 'git', token: git.token };
        }
        return { cloneUrl: git.remoteUrl };
      },
    };
  },
});

export default gitProvider;
