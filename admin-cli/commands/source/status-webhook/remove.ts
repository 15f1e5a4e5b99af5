// `svc-admin source status-webhook remove <source-id>`: stop sending the source's run status
// changes to its webhook (deliveries already queued end `skipped`).
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { removeStatusWebhook, type StatusWebhookSummary } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../shared.ts';
import { audited } from '../../audit/shared.ts';

export default class SourceStatusWebhookRemove extends SvcCommand {
  static override description = "Stop sending a source's run status changes to its webhook";
  static override args = { id: Args.string({ required: true, description: 'source id' }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<{ removed: StatusWebhookSummary }> {
    const { args, flags } = await this.parse(SourceStatusWebhookRemove);
    const config = await adminConfig();
    const removed = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => audited(pool, { action: 'source.status_webhook_remove', target: `source:${args.id}` }, () => removeStatusWebhook(pool, args.id)));
    if (!this.jsonEnabled()) this.log(`run-status webhook of source ${removed.sourceId} (${removed.url}) removed`);
    return { removed };
  }
}
