// `svc-admin event-dlq retry <id>... | --all [--org <org>] [--name <event>] [--json]`: puts
// dead-lettered events back to pending with a fresh attempt count; the delivery loop takes them
// again. Every named id must be in the queue, or nothing changes.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { retryDlq } from '../../../kernel/orchestrator/events/dlq.ts';
import { adminConfig, databaseFlag, databaseUrl, filterFlags, selectionOf, withDatabase } from './shared.ts';

export default class EventDlqRetry extends SvcCommand {
  static override description = 'Put dead-lettered internal events back for delivery (named ids, or --all)';
  static override usage = ['event-dlq retry <id>... [--json]', 'event-dlq retry --all [--org <org>] [--name <event>] [--json]'];
  // Any number of ids.
  static override strict = false;
  static override flags = {
    ...databaseFlag,
    ...filterFlags,
    all: Flags.boolean({ description: 'every event in the queue (narrowed by --org/--name)', default: false }),
  };

  async run(): Promise<{ retried: string[] }> {
    const { argv, flags } = await this.parse(EventDlqRetry);
    const { ids, filter } = selectionOf('retry', argv as string[], flags);
    const config = await adminConfig();
    const retried = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => retryDlq(pool, ids, filter));
    if (!this.jsonEnabled()) {
      this.log(`retried ${retried.length} event(s)`);
      for (const id of retried) this.log(id);
    }
    return { retried };
  }
}
