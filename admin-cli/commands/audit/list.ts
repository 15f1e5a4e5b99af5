// `svc-admin audit list [--actor] [--action] [--org] [--outcome] [--since] [--until] [--limit] [--json]`:
// the audit trail (docs/audit.md), newest first, one line per record; --json prints one JSON
// object per line (JSON lines), to pipe into jq or a log store. Reads the orchestrator database.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { AUDIT_OUTCOMES, MAX_AUDIT_LIMIT, type AuditEvent, type AuditQuery } from '../../../schemas/http/audit.ts';
import { formatAuditLine, listAudit } from '../../../kernel/orchestrator/audit/store.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

export default class AuditList extends SvcCommand {
  static override description = 'List the audit trail: who changed what, when, and the outcome (reads the orchestrator database)';
  static override examples = [
    '<%= config.bin %> audit list --since 2026-12-01T00:00:00Z --action run.approve',
    '<%= config.bin %> audit list --actor alice --outcome refused --json',
  ];
  // --json prints one object per record, one line each (not oclif's single document).
  static override enableJsonFlag = false;
  static override flags = {
    ...databaseFlag,
    actor: Flags.string({ description: 'only this actor (a person\'s login or name, a token\'s user, the OS user of svc-admin, or an id)' }),
    action: Flags.string({ description: 'only this action (run.approve) or area, ending in a dot (run.)' }),
    org: Flags.string({ description: 'only this org' }),
    outcome: Flags.string({ description: `only this outcome: ${AUDIT_OUTCOMES.join(', ')}`, options: [...AUDIT_OUTCOMES] }),
    since: Flags.string({ description: 'from this time (ISO 8601, inclusive)' }),
    until: Flags.string({ description: 'before this time (ISO 8601, exclusive)' }),
    limit: Flags.integer({ description: 'how many records', default: 100, min: 1, max: MAX_AUDIT_LIMIT }),
    json: Flags.boolean({ description: 'one JSON object per record, one line each (JSON lines)' }),
  };

  async run(): Promise<{ events: AuditEvent[] }> {
    const { flags } = await this.parse(AuditList);
    const query: AuditQuery = { limit: flags.limit };
    if (flags.actor !== undefined) query.actor = flags.actor;
    if (flags.action !== undefined) query.action = flags.action;
    if (flags.org !== undefined) query.org = flags.org;
    if (flags.outcome !== undefined) query.outcome = flags.outcome as AuditQuery['outcome'] & string;
    if (flags.since !== undefined) query.since = flags.since;
    if (flags.until !== undefined) query.until = flags.until;
    const config = await adminConfig();
    const events = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => listAudit(pool, query));
    if (flags.json) {
      for (const e of events) this.log(JSON.stringify(e));
    } else {
      if (events.length === 0) this.log('no audit records match');
      for (const e of events) this.log(formatAuditLine(e));
      if (events.length === flags.limit) this.log(`… the newest ${flags.limit} (narrow with --since/--actor/--action or raise --limit to see more)`);
    }
    return { events };
  }
}
