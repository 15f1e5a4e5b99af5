// `svc-admin cache purge --org <org> [--scope shared|iso/<run>]`: deletes an org's user cache.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { purgeUserCache, type PurgeResult } from '../../../kernel/orchestrator/caches/index.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase, withStorage } from './shared.ts';

export default class CachePurge extends SvcCommand {
  static override description = "Delete an org's user cache entries (all scopes, or one) and their objects";
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ description: 'org whose user cache to delete', required: true }),
    scope: Flags.string({ description: 'only this scope: shared or iso/<run id>' }),
  };

  async run(): Promise<PurgeResult & { org: string; scope: string | null }> {
    const { flags } = await this.parse(CachePurge);
    const config = await adminConfig();
    const url = databaseUrl(config, flags['database-url']);
    const result = await withStorage(config, (storage) =>
      withDatabase(url, (pool) => purgeUserCache(pool, storage, { org: flags.org, ...(flags.scope === undefined ? {} : { scope: flags.scope }) })),
    );
    if (!this.jsonEnabled()) {
      this.log(`Purged ${result.entries} user cache entries and ${result.uploads} pending uploads of org ${flags.org}${flags.scope ? ` (scope ${flags.scope})` : ''}.`);
    }
    return { ...result, org: flags.org, scope: flags.scope ?? null };
  }
}
