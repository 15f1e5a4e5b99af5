// `svc-admin source status-webhook list [--org <org_id>]`: sources that send their run status
// changes to a webhook, and where; never a secret.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../../core/cli/base-command.ts';
import { listStatusWebhooks, type StatusWebhookSummary } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../shared.ts';

export default class SourceStatusWebhookList extends SvcCommand {
  static override description = 'List run-status webhooks of sources (URLs only; secrets are never shown)';
  static override flags = { ...databaseFlag, org: Flags.string({ description: 'only this org' }) };

  async run(): Promise<{ webhooks: StatusWebhookSummary[] }> {
    const { flags } = await this.parse(SourceStatusWebhookList);
    const config = await adminConfig();
    const webhooks = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => listStatusWebhooks(pool, flags.org));
    if (!this.jsonEnabled()) {
      if (webhooks.length === 0) this.log('no run-status webhooks');
      for (const w of webhooks) this.log(`${w.sourceId}  ${w.orgId}  ${w.url}  updated ${w.updatedAt}`);
    }
    return { webhooks };
  }
}
