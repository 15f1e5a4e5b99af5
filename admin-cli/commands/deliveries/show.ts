// `svc-admin deliveries show <delivery-id> --org <org> [--json]`: one webhook delivery record:
// its outcome, event, the pipeline steps in the order they ran, its runs and where its payload is.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { NotFoundError } from '../../../core/errors.ts';
import { getDelivery, type DeliveryRecord } from '../../../kernel/orchestrator/ingest/record/queries.ts';
import { oneLine } from '../event-dlq/shared.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';
import { refAndSha } from './list.ts';

/** What the record says about the payload (spec: payload pointer, `payload_omitted` and its reason). */
export function payloadText(d: DeliveryRecord): string {
  const bytes = d.payloadBytes === null ? '' : `, ${d.payloadBytes} bytes`;
  if (!d.payloadOmitted && d.payloadKey !== null) return `stored under key ${d.payloadKey}${bytes}`;
  if (d.payloadOmitted) {
    const reason = d.payloadOmittedReason ?? 'no reason recorded';
    // The write after the ack not (yet) confirmed: pending for milliseconds, or lost in a crash.
    const planned = d.payloadKey === null ? '' : ` (written after the ack to ${d.payloadKey}; not confirmed)`;
    return `omitted: ${reason}${planned}${bytes}`;
  }
  return 'none recorded (the delivery was not processed)';
}

export default class DeliveriesShow extends SvcCommand {
  static override description = 'Show one webhook delivery record: outcome, event, pipeline steps, runs, payload (reads the orchestrator database)';
  static override args = { deliveryId: Args.string({ required: true, description: 'delivery id (from "svc-admin deliveries list")' }) };
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ description: 'the org of the delivery (ids are unique per org)', required: true }),
  };

  async run(): Promise<DeliveryRecord> {
    const { args, flags } = await this.parse(DeliveriesShow);
    const config = await adminConfig();
    const d = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => getDelivery(pool, flags.org, args.deliveryId));
    if (d === null) {
      throw new NotFoundError('SVC_ERR_DELIVERY_NOT_FOUND', `no delivery ${args.deliveryId} in org ${flags.org}; list them with "svc-admin deliveries list --org ${flags.org}"`);
    }
    if (!this.jsonEnabled()) {
      const why = [d.shedReason, d.message].filter((s): s is string => s !== null && s !== '').map((s) => oneLine(s, 300));
      this.log(`delivery ${d.deliveryId}  org ${d.orgId}  ${d.status}${why.length > 0 ? ` (${why.join('; ')})` : ''}`);
      this.log(`  received ${d.receivedAt}  updated ${d.updatedAt}  node ${d.nodeId ?? '-'}  attempts ${d.attempts}  duplicates ${d.duplicates}${d.generation > 0 ? `  generation ${d.generation}` : ''}${d.archivedAt !== null ? `  archived ${d.archivedAt}` : ''}`);
      this.log(`  source ${d.sourceId ?? '-'}  routing key ${d.routingKey}  provider ${d.providerKind}`);
      const event = `${d.eventType ?? '-'}${d.action ? `.${d.action}` : ''}`;
      this.log(`  event ${event}  name ${d.eventName ?? '-'}  repository ${d.repository ?? '-'}  ${refAndSha(d)}  sender ${d.sender ?? '-'}  trust ${d.trustTier ?? '-'}${d.workflowModified ? '  workflows modified by head' : ''}`);
      this.log('steps:');
      if (d.steps.length === 0) this.log('  none recorded');
      for (const s of d.steps) this.log(`  ${s.step}  ${s.outcome}${s.detail === undefined || s.detail === '' ? '' : `  ${oneLine(s.detail, 500)}`}`);
      this.log(`runs: ${d.runIds.length === 0 ? 'none' : d.runIds.join(' ')}`);
      this.log(`payload: ${payloadText(d)}`);
    }
    return d;
  }
}
