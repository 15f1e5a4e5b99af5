// `svc-admin cache list [--org <org>] [--limit N] [--json]`: user and build cache entries.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { MAX_CACHE_LIST, formatBytes, listCacheEntries, type CacheListRow } from '../../../kernel/orchestrator/caches/index.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from './shared.ts';

export default class CacheList extends SvcCommand {
  static override description = 'List cache entries (user cache by scope, source and dependency caches), newest first';
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ description: 'only this org (dependency caches belong to no org and are left out)' }),
    limit: Flags.integer({ description: 'how many entries', default: 1000, min: 1, max: MAX_CACHE_LIST }),
  };

  async run(): Promise<{ entries: CacheListRow[] }> {
    const { flags } = await this.parse(CacheList);
    const config = await adminConfig();
    const entries = await withDatabase(databaseUrl(config, flags['database-url']), (pool) =>
      listCacheEntries(pool, { limit: flags.limit, ...(flags.org === undefined ? {} : { org: flags.org }) }),
    );
    if (!this.jsonEnabled()) {
      if (entries.length === 0) this.log('no cache entries');
      for (const e of entries) {
        const read = new Date(e.lastReadAt).toISOString();
        this.log(`${e.kind.padEnd(6)}  ${(e.org ?? '-').padEnd(12)}  ${(e.scope ?? '-').padEnd(14)}  ${formatBytes(e.sizeBytes).padStart(10)}  read ${read}  ${e.key}`);
      }
    }
    return { entries };
  }
}
