// `svc notifications [--limit N] [--json]`: what the org's orchestrator has to tell the developer:
// runs (or jobs, steps, contexts) waiting for an approval (`svc approve|reject`), and the recent
// outbound run-status notifications (forge status API and signed run-status webhooks, spec
// "Events": outbound webhook notifications of run status) with how each delivery went.
import { Flags } from '@oclif/core';
import { DEFAULT_NOTIFICATIONS_LIMIT, MAX_NOTIFICATIONS_LIMIT } from '../../schemas/wire/relay.ts';
import type { Notifications as NotificationsAnswer } from '../../schemas/http/org.ts';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { formatTable } from '../table.ts';

export default class Notifications extends SvcCommand {
  static override description = 'Show runs awaiting approval and the recent run-status notifications (forge status, status webhooks) with their outcome';
  static override examples = ['<%= config.bin %> notifications', '<%= config.bin %> notifications --limit 50 --json'];
  static override flags = {
    limit: Flags.integer({ description: `how many of each (at most ${MAX_NOTIFICATIONS_LIMIT})`, default: DEFAULT_NOTIFICATIONS_LIMIT, min: 1, max: MAX_NOTIFICATIONS_LIMIT }),
  };

  async run(): Promise<NotificationsAnswer> {
    const { flags } = await this.parse(Notifications);
    const { PlatformClient } = await import('../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const answer = await client.notifications(flags.limit);
    if (this.jsonEnabled()) return answer;
    if (answer.approvals.length === 0) this.log('Awaiting approval: none');
    else {
      this.log('Awaiting approval (svc approve|reject <run>):');
      const rows = answer.approvals.map((a) => [a.runId, a.workflow, a.repository, [a.level, a.job, a.step, a.context].filter((x) => x !== null).join(' '), a.reason ?? '-', a.createdAt]);
      for (const line of formatTable(['RUN', 'WORKFLOW', 'REPOSITORY', 'HOLD', 'REASON', 'SINCE'], rows)) this.log(`  ${line}`);
    }
    if (answer.deliveries.length === 0) this.log('Run-status notifications: none');
    else {
      this.log('Run-status notifications:');
      const rows = answer.deliveries.map((d) => [
        d.createdAt,
        d.runId,
        `${d.target}/${d.providerKind}`,
        d.conclusion === null ? `${d.runStatus} (${d.state})` : `${d.runStatus} (${d.conclusion})`,
        d.status,
        d.status === 'failed' || (d.status === 'pending' && d.lastError !== null) ? `${d.attempts} attempt(s): ${d.lastError ?? `HTTP ${d.lastStatusCode}`}` : `${d.attempts} attempt(s)`,
      ]);
      for (const line of formatTable(['AT', 'RUN', 'TARGET', 'RUN STATUS', 'DELIVERY', 'ATTEMPTS'], rows)) this.log(`  ${line}`);
    }
    return answer;
  }
}
