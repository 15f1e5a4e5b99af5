// `svc-admin event-dlq discard <id>... | --all [--org <org>] [--name <event>] --reason <text> [--json]`:
// ends dead-lettered events for good. They are marked processed with the reason (kept for the
// record, never delivered). Every named id must be in the queue, or nothing changes.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { discardDlq } from '../../../kernel/orchestrator/events/dlq.ts';
import { adminConfig, databaseFlag, databaseUrl, filterFlags, selectionOf, withDatabase } from './shared.ts';

export default class EventDlqDiscard extends SvcCommand {
  static override description = 'Discard dead-lettered internal events with a reason (named ids, or --all)';
  static override usage = ['event-dlq discard <id>... --reason <text> [--json]', 'event-dlq discard --all [--org <org>] [--name <event>] --reason <text> [--json]'];
  // Any number of ids.
  static override strict = false;
  static override flags = {
    ...databaseFlag,
    ...filterFlags,
    all: Flags.boolean({ description: 'every event in the queue (narrowed by --org/--name)', default: false }),
    reason: Flags.string({ description: 'why they are discarded (kept on each event)', required: true }),
  };

  async run(): Promise<{ discarded: string[] }> {
    const { argv, flags } = await this.parse(EventDlqDiscard);
    const { ids, filter } = selectionOf('discard', argv as string[], flags);
    const reason = flags.reason.trim();
    if (reason.length === 0 || reason.length > 1000) throw new InputError(USAGE_ERROR_CODE, '--reason must be 1-1000 characters');
    const config = await adminConfig();
    const discarded = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => discardDlq(pool, ids, reason, filter));
    if (!this.jsonEnabled()) {
      this.log(`discarded ${discarded.length} event(s)`);
      for (const id of discarded) this.log(id);
    }
    return { discarded };
  }
}
