// `svc-admin config history [--limit N] [--json]`: the shared config versions, newest first.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { listConfigVersions } from '../../../kernel/orchestrator/config/versions.ts';
import type { ConfigVersionList } from '../../../schemas/http/config.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './shared.ts';

export default class ConfigHistory extends SvcCommand {
  static override description = 'List shared config versions, newest first: version, when, by whom, description, sealed paths';
  static override flags = {
    ...databaseFlag,
    limit: Flags.integer({ description: 'at most this many (default 100)', min: 1, max: 1000, default: 100 }),
  };

  async run(): Promise<ConfigVersionList> {
    const { flags } = await this.parse(ConfigHistory);
    const config = await adminConfig();
    const versions = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => listConfigVersions(pool, flags.limit));
    if (!this.jsonEnabled()) {
      if (versions.length === 0) this.log('no shared config versions yet');
      for (const v of versions) {
        const sealed = v.encryptedPaths.length > 0 ? `  sealed: ${v.encryptedPaths.join(', ')}` : '';
        this.log(`${String(v.version).padStart(4)}  ${v.createdAt}  ${v.createdBy.padEnd(13)}${v.description ? `  ${v.description}` : ''}${sealed}`);
      }
    }
    return { versions };
  }
}
