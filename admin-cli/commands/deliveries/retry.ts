// `svc-admin deliveries retry <delivery-id> --org <org> [--json]`: a delivery kept after a
// passing failure (recorded `retrying`, or `failed` once given up) is due again now, with a new
// give-up clock; an orchestrator's retry worker takes it within a second. Deliveries that were
// not kept have no bytes here: the command says so and changes nothing.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { requestRetry } from '../../../kernel/orchestrator/ingest/retry/store.ts';
import { oneLine } from '../event-dlq/shared.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

export default class DeliveriesRetry extends SvcCommand {
  static override description = 'Retry a webhook delivery kept after a passing failure (status retrying or failed) now (writes the orchestrator database)';
  static override args = { deliveryId: Args.string({ required: true, description: 'delivery id (from "svc-admin deliveries list --status failed")' }) };
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ description: 'the org of the delivery (ids are unique per org)', required: true }),
  };

  async run(): Promise<{ deliveryId: string; orgId: string; attempts: number; lastError: string }> {
    const { args, flags } = await this.parse(DeliveriesRetry);
    const config = await adminConfig();
    const row = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => requestRetry(pool, flags.org, args.deliveryId));
    if (!this.jsonEnabled()) {
      this.log(`delivery ${args.deliveryId} (org ${flags.org}) is due for retry now; ${row.attempts} attempt(s) so far, last error: ${oneLine(row.lastError, 300)}`);
      this.log(`follow it with "svc-admin deliveries show ${args.deliveryId} --org ${flags.org}"`);
    }
    return { deliveryId: args.deliveryId, orgId: flags.org, ...row };
  }
}
