// `svc-admin forge-status show <delivery-id> [--json]`: one run status delivery with every
// attempt (when, which node, the HTTP status, the error). Reads the orchestrator database.
import { Args } from '@oclif/core';
import type { ForgeStatusDeliveryDetail } from '../../../schemas/http/forge-status.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { getForgeStatus } from '../../../kernel/orchestrator/forge-status/index.ts';
import { oneLine } from '../event-dlq/shared.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';
import { reportedText } from './list.ts';

export default class ForgeStatusShow extends SvcCommand {
  static override description = 'Show one run status delivery with every attempt (reads the orchestrator database)';
  static override args = { id: Args.string({ required: true, description: 'delivery id (from "svc-admin forge-status list")' }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<ForgeStatusDeliveryDetail> {
    const { args, flags } = await this.parse(ForgeStatusShow);
    const config = await adminConfig();
    const d = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => getForgeStatus(pool, args.id));
    if (!this.jsonEnabled()) {
      this.log(`delivery ${d.id}  ${d.status}  ${d.target}:${d.providerKind}  source ${d.sourceId}`);
      this.log(`  run ${d.runId}  org ${d.orgId}  ${d.runStatus} at ${d.changedAt} → ${reportedText(d)}`);
      this.log(`  attempts ${d.attempts}${d.nextAttemptAt === null ? '' : `  next ${d.nextAttemptAt}`}${d.deliveredAt === null ? '' : `  delivered ${d.deliveredAt}`}${d.externalId === null ? '' : `  forge id ${d.externalId}`}`);
      if (d.lastError !== null) this.log(`  last error: ${oneLine(d.lastError, 500)}`);
      this.log('attempts:');
      if (d.history.length === 0) this.log('  none yet');
      for (const a of d.history) {
        this.log(`  #${a.attempt}  ${a.startedAt}  ${a.outcome}${a.statusCode === null ? '' : `  http=${a.statusCode}`}  node ${a.nodeId}${a.error === null ? '' : `  ${oneLine(a.error, 300)}`}`);
      }
    }
    return d;
  }
}
