// `svc-admin event-dlq count [--org <org>] [--name <event>] [--json]`: how many internal events
// wait in the dead-letter queue.
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { countDlq } from '../../../kernel/orchestrator/events/dlq.ts';
import { adminConfig, databaseFlag, databaseUrl, filterFlags, filterOf, withDatabase } from './shared.ts';

export default class EventDlqCount extends SvcCommand {
  static override description = 'Count the internal events in the dead-letter queue';
  static override flags = { ...databaseFlag, ...filterFlags };

  async run(): Promise<{ count: number }> {
    const { flags } = await this.parse(EventDlqCount);
    const config = await adminConfig();
    const count = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => countDlq(pool, filterOf(flags)));
    if (!this.jsonEnabled()) this.log(String(count));
    return { count };
  }
}
