// `svc-admin source remove <source-id>`: deletes a source (and its registrations).
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { removeSource, type SourceSummary } from '../../../kernel/orchestrator/sources/store.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class SourceRemove extends SvcCommand {
  static override description = 'Remove a webhook source; its registrations go with it';
  static override args = { id: Args.string({ required: true, description: 'source id' }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<{ removed: SourceSummary }> {
    const { args, flags } = await this.parse(SourceRemove);
    const config = await adminConfig();
    const removed = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => audited(pool, { action: 'source.remove', target: `source:${args.id}` }, () => removeSource(pool, args.id)));
    if (!this.jsonEnabled()) this.log(`source ${removed.id} (${removed.routingKey}) removed`);
    return { removed };
  }
}
