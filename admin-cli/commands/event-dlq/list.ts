// `svc-admin event-dlq list [--org <org>] [--name <event>] [--limit N] [--json]`: the dead-letter
// queue of internal events, newest first (reads the orchestrator database).
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { countDlq, listDlq, type DlqEntry } from '../../../kernel/orchestrator/events/dlq.ts';
import { adminConfig, databaseFlag, databaseUrl, filterFlags, filterOf, oneLine, withDatabase } from './shared.ts';

export default class EventDlqList extends SvcCommand {
  static override description = 'List the internal events in the dead-letter queue (delivery failed on every attempt)';
  static override flags = {
    ...databaseFlag,
    ...filterFlags,
    limit: Flags.integer({ description: 'how many events', default: 100, min: 1, max: 1000 }),
  };

  async run(): Promise<{ events: DlqEntry[] }> {
    const { flags } = await this.parse(EventDlqList);
    const config = await adminConfig();
    const filter = filterOf(flags);
    const { events, total } = await withDatabase(databaseUrl(config, flags['database-url']), async (pool) => {
      const events = await listDlq(pool, { ...filter, limit: flags.limit });
      return { events: [...events], total: this.jsonEnabled() ? events.length : await countDlq(pool, filter) };
    });
    if (!this.jsonEnabled()) {
      if (events.length === 0) this.log('no events in the dead-letter queue');
      for (const e of events) {
        const error = e.lastError === null ? '-' : oneLine(e.lastError, 100);
        this.log(`${e.id}  ${e.name}  org=${e.orgId}  attempts=${e.attempts}  ${e.dlqReason}  ${e.dlqAt ?? '-'}  ${error}`);
      }
      if (total > events.length) this.log(`… ${total - events.length} more (raise --limit to see them)`);
    }
    return { events };
  }
}
