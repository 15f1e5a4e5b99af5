// `svc-admin source purge-stale (--dry-run | --confirm) [--older-than <days>] [--json]`: sources
// with no delivery and no run for N days (default 90) and no unfinished run, with their
// registrations, run-status webhook and pending forge-status deliveries (the definition is in
// kernel/orchestrator/sources/purge-stale.ts). `--dry-run` lists them; `--confirm` deletes them
// in one transaction and prints counts; neither is refused.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { DEFAULT_STALE_DAYS, findStaleSources, purgeStaleSources, type PurgeCounts, type StaleSource } from '../../../kernel/orchestrator/sources/purge-stale.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from './shared.ts';

export default class SourcePurgeStale extends SvcCommand {
  static override description = `Delete sources with no delivery and no run for --older-than days (default ${DEFAULT_STALE_DAYS}) and no unfinished run; --dry-run lists, --confirm deletes`;
  static override examples = ['<%= config.bin %> source purge-stale --dry-run', '<%= config.bin %> source purge-stale --older-than 30 --confirm'];
  static override flags = {
    ...databaseFlag,
    'dry-run': Flags.boolean({ description: 'list the stale sources; delete nothing', default: false, exclusive: ['confirm'] }),
    confirm: Flags.boolean({ description: 'delete the stale sources (one transaction)', default: false, exclusive: ['dry-run'] }),
    'older-than': Flags.integer({ description: 'days without a delivery or a run', min: 1, default: DEFAULT_STALE_DAYS }),
  };

  async run(): Promise<{ dryRun: boolean; olderThanDays: number; sources: readonly StaleSource[]; counts?: PurgeCounts }> {
    const { flags } = await this.parse(SourcePurgeStale);
    if (!flags['dry-run'] && !flags.confirm) {
      throw new InputError(USAGE_ERROR_CODE, 'source purge-stale deletes sources: pass --dry-run to list what would go, or --confirm to delete it');
    }
    const days = flags['older-than'];
    const config = await adminConfig();
    const url = databaseUrl(config, flags['database-url']);
    if (flags['dry-run']) {
      const sources = await withDatabase(url, (pool) => findStaleSources(pool, days));
      if (!this.jsonEnabled()) {
        if (sources.length === 0) this.log(`no source is stale (no delivery and no run for ${days} days)`);
        for (const s of sources) this.log(describe(s));
        if (sources.length > 0) this.log(`${sources.length} stale source${sources.length === 1 ? '' : 's'} would be purged; run again with --confirm to delete`);
      }
      return { dryRun: true, olderThanDays: days, sources };
    }
    const { purged, counts } = await withDatabase(url, (pool) => purgeStaleSources(pool, days));
    if (!this.jsonEnabled()) {
      for (const s of purged) this.log(`purged ${describe(s)}`);
      this.log(`Purged ${counts.sources} sources, ${counts.registrations} registrations, ${counts.statusWebhooks} run-status webhooks, ${counts.forgeStatusDeliveries} pending forge-status deliveries.`);
    }
    return { dryRun: false, olderThanDays: days, sources: purged, counts };
  }
}

function describe(s: StaleSource): string {
  return `${s.id}  ${s.orgId}  ${s.routingKey}  ${s.name}  last activity ${s.lastActivityAt ?? 'never'}  ${s.registrations} registrations`;
}
