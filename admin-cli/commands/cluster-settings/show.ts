// `svc-admin cluster-settings show [--json]`: the settings every orchestrator of the cluster
// follows (docs/cluster.md), read from the database (a node seeds the row at its first start).
import { SvcCommand } from '../../../core/cli/base-command.ts';
import type { ClusterSettings } from '../../../schemas/http/settings.ts';
import { readClusterSettings } from '../../../kernel/orchestrator/cluster/settings.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';
import { describeClusterSettings, seedOf } from './shared.ts';

export default class ClusterSettingsShow extends SvcCommand {
  static override description = 'Show the cluster-wide settings every orchestrator follows (attempt limit, sealed-secrets retry back-off)';
  static override flags = { ...databaseFlag };

  async run(): Promise<ClusterSettings> {
    const { flags } = await this.parse(ClusterSettingsShow);
    const config = await adminConfig();
    const stored = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => readClusterSettings(pool));
    // No node started yet: what the first one would store from this config.
    const settings = stored ?? { settings: seedOf(config), updatedAt: '', updatedBy: '(not stored yet: the first orchestrator to start stores its config values)' };
    if (!this.jsonEnabled()) this.log(describeClusterSettings(settings));
    return settings;
  }
}
