// `svc-admin source list [--org <org_id>]`: sources with their routing keys; never a secret.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { listSources, webhookUrl, type SourceSummary } from '../../../kernel/orchestrator/sources/store.ts';
import { adminConfig, databaseFlag, databaseUrl, ingestBaseUrl, withDatabase } from './shared.ts';

export default class SourceList extends SvcCommand {
  static override description = 'List webhook sources (routing keys, webhook URLs, rotation state); secrets are never shown';
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ description: 'only this org' }),
    url: Flags.string({ description: 'base address senders post to (default: SVC_PLATFORM_URL, else the orchestrator)' }),
  };

  async run(): Promise<{ sources: Array<SourceSummary & { webhookUrl: string }> }> {
    const { flags } = await this.parse(SourceList);
    const config = await adminConfig();
    const sources = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => listSources(pool, flags.org));
    const base = ingestBaseUrl(config, flags.url);
    const out = sources.map((s) => ({ ...s, webhookUrl: webhookUrl(base, s) }));
    if (!this.jsonEnabled()) {
      if (out.length === 0) this.log('no sources');
      for (const s of out) this.log(`${s.id}  ${s.orgId}  ${s.routingKey}  ${s.name}${s.rotating ? '  (rotating)' : ''}  ${s.webhookUrl}`);
    }
    return { sources: out };
  }
}
