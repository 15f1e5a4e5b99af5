// `svc-admin forge-status list [--run <id>] [--org] [--status] [--target] [--limit N] [--json]`:
// run status deliveries to forges (check runs) and run-status webhooks, one line each: newest
// first, or a run's in the order of its changes. Reads the orchestrator database.
import { Flags } from '@oclif/core';
import type { ForgeStatusDelivery } from '../../../schemas/http/forge-status.ts';
import { FORGE_STATUS_DELIVERY_STATUSES, FORGE_STATUS_TARGETS } from '../../../schemas/http/forge-status.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { checkForgeStatusFilter, DEFAULT_FORGE_STATUS_LIMIT, listForgeStatus, MAX_FORGE_STATUS_LIMIT, type ForgeStatusFilter } from '../../../kernel/orchestrator/forge-status/index.ts';
import { oneLine } from '../event-dlq/shared.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

/** `completed/success`, `in_progress`, … */
export function reportedText(d: Pick<ForgeStatusDelivery, 'state' | 'conclusion'>): string {
  return d.conclusion === null ? d.state : `${d.state}/${d.conclusion}`;
}

export function deliveryLine(d: ForgeStatusDelivery): string {
  const code = d.lastStatusCode === null ? '' : `  http=${d.lastStatusCode}`;
  const next = d.nextAttemptAt === null ? '' : `  next=${d.nextAttemptAt}`;
  const error = d.lastError === null || d.status === 'delivered' ? '' : `  ${oneLine(d.lastError, 200)}`;
  return `${d.createdAt}  ${d.id}  run ${d.runId}  ${d.target}:${d.providerKind}  ${d.runStatus} → ${reportedText(d)}  ${d.status}  attempts=${d.attempts}${code}${next}${error}`;
}

export default class ForgeStatusList extends SvcCommand {
  static override description = 'List run status deliveries to forges (check runs) and run-status webhooks, with their attempts (reads the orchestrator database)';
  static override examples = ['<%= config.bin %> forge-status list --run 1b4e28ba-2fa1-4d6e-9a3c-0f8b5e6d7c21', '<%= config.bin %> forge-status list --status failed --json'];
  static override flags = {
    ...databaseFlag,
    run: Flags.string({ description: 'only this run (its deliveries in the order of its changes)' }),
    org: Flags.string({ description: 'only this org' }),
    status: Flags.string({ description: `only this status: ${FORGE_STATUS_DELIVERY_STATUSES.join(', ')}` }),
    target: Flags.string({ description: `only this target: ${FORGE_STATUS_TARGETS.join(', ')}` }),
    limit: Flags.integer({ description: 'how many deliveries', default: DEFAULT_FORGE_STATUS_LIMIT, min: 1, max: MAX_FORGE_STATUS_LIMIT }),
  };

  async run(): Promise<{ deliveries: ForgeStatusDelivery[] }> {
    const { flags } = await this.parse(ForgeStatusList);
    const filter: ForgeStatusFilter = { runId: flags.run, orgId: flags.org, status: flags.status, target: flags.target, limit: flags.limit };
    // Bad filters are refused before the database is opened.
    checkForgeStatusFilter(filter);
    const config = await adminConfig();
    const deliveries = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => listForgeStatus(pool, filter));
    if (!this.jsonEnabled()) {
      if (deliveries.length === 0) this.log('no forge status deliveries');
      for (const d of deliveries) this.log(deliveryLine(d));
      if (deliveries.length === flags.limit) this.log(`… the first ${flags.limit} (narrow with --run/--status or raise --limit to see more)`);
    }
    return { deliveries };
  }
}
