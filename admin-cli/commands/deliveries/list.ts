// `svc-admin deliveries list [--org] [--source] [--status] [--since] [--until] [--repository]
// [--limit N] [--archived] [--json]`: the webhook delivery records (the event log), newest first, one line each.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import {
  DEFAULT_DELIVERY_LIMIT,
  DELIVERY_RECORD_STATUSES,
  listDeliveries,
  MAX_DELIVERY_LIMIT,
  parseDeliveryFilter,
  type DeliveryFilterInput,
  type DeliverySummary,
} from '../../../kernel/orchestrator/ingest/record/queries.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

/** `main@1a2b3c4`, `refs/pull/7/head@1a2b3c4`, `@1a2b3c4`, or `-`. */
export function refAndSha(d: { ref: string | null; sha: string | null }): string {
  const ref = d.ref === null ? '' : d.ref.replace(/^refs\/(heads|tags)\//, '');
  const sha = d.sha === null ? '' : d.sha.slice(0, 7);
  if (ref === '' && sha === '') return '-';
  return sha === '' ? ref : `${ref}@${sha}`;
}

export default class DeliveriesList extends SvcCommand {
  static override description = 'List webhook delivery records (the event log), newest first (reads the orchestrator database)';
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ description: 'only this org' }),
    source: Flags.string({ description: 'only this source: its id (svc-admin source list) or routing key (github:<app id>, generic:<source_id>)' }),
    status: Flags.string({ description: `only this status: ${DELIVERY_RECORD_STATUSES.join(', ')}` }),
    since: Flags.string({ description: 'received at or after: an ISO timestamp (no zone: UTC) or a duration back from now (30m, 1h, 7d)' }),
    until: Flags.string({ description: 'received before: an ISO timestamp or a duration back from now' }),
    repository: Flags.string({ description: 'only this repository (owner/name)' }),
    limit: Flags.integer({ description: 'how many deliveries', default: DEFAULT_DELIVERY_LIMIT, min: 1, max: MAX_DELIVERY_LIMIT }),
    archived: Flags.boolean({ description: 'include records archived past the warm retention window (eventLog.warmRetentionDays), marked "archived"', default: false }),
  };

  async run(): Promise<{ deliveries: DeliverySummary[] }> {
    const { flags } = await this.parse(DeliveriesList);
    const filter: DeliveryFilterInput = {
      orgId: flags.org,
      sourceId: flags.source,
      status: flags.status,
      since: flags.since,
      until: flags.until,
      repository: flags.repository,
      limit: flags.limit,
      archived: flags.archived,
    };
    // Bad filters are refused before the database is opened.
    parseDeliveryFilter(filter);
    const config = await adminConfig();
    const deliveries = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => listDeliveries(pool, filter));
    if (!this.jsonEnabled()) {
      if (deliveries.length === 0) this.log('no deliveries');
      for (const d of deliveries) {
        const event = d.eventName ?? d.eventType ?? '-';
        this.log(`${d.receivedAt}  ${d.orgId}  ${d.deliveryId}  ${d.status}  ${event}  ${d.repository ?? '-'}  ${refAndSha(d)}  runs=${d.runIds.length}${d.archivedAt !== null ? '  archived' : ''}`);
      }
      if (deliveries.length === flags.limit) this.log(`… the first ${flags.limit} (narrow with --since/--status or raise --limit to see more)`);
    }
    return { deliveries };
  }
}
