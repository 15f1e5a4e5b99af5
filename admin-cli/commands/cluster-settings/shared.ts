// Helpers of the `svc-admin cluster-settings` commands.
import type { SvcConfig } from '../../../schemas/config.ts';
import type { ClusterSettings, ClusterSettingsValues } from '../../../schemas/http/settings.ts';

/** What a node started with this config would store as the cluster settings. */
export function seedOf(config: SvcConfig): ClusterSettingsValues {
  return { maxDispatchAttempts: config.cluster.maxDispatchAttempts, sealedSecretsRetryBackoffMs: config.sealedSecretsRetryBackoffMs };
}

export function describeClusterSettings(s: ClusterSettings): string {
  return [
    `maxDispatchAttempts          ${s.settings.maxDispatchAttempts}`,
    `sealedSecretsRetryBackoffMs  ${s.settings.sealedSecretsRetryBackoffMs}`,
    s.updatedAt === '' ? s.updatedBy : `updated ${s.updatedAt} by ${s.updatedBy}`,
  ].join('\n');
}
