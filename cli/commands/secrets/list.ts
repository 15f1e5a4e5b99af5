// `svc secrets list [--json]`: the secret contexts the org's orchestrator holds for it (bound to
// the org, or by repository pattern), each with its binding, whether it is a test context
// (`allowLocalExecution`, the only kind `svc secrets set` writes) and its key names. Values never
// leave the orchestrator.
import type { SecretList } from '../../../schemas/http/org.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { formatTable } from '../../table.ts';

export default class SecretsList extends SvcCommand {
  static override description = 'List secret names and the contexts they belong to, through the Platform (never values)';
  static override examples = ['<%= config.bin %> secrets list', '<%= config.bin %> secrets list --json'];

  async run(): Promise<SecretList> {
    await this.parse(SecretsList);
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const list = await client.secrets();
    if (!this.jsonEnabled()) {
      if (list.contexts.length === 0) this.log(`no secret context of ${client.org} (an operator creates them: svc-admin context create)`);
      const rows = list.contexts.map((c) => [
        c.name,
        c.allowLocalExecution ? 'yes' : 'no',
        [...c.orgs.map((o) => `org:${o}`), ...c.repositories].join(',') || '(unbound)',
        c.keys.map((k) => k.key).join(', ') || '-',
      ]);
      if (rows.length > 0) for (const line of formatTable(['CONTEXT', 'TEST', 'BOUND TO', 'SECRETS'], rows)) this.log(line);
    }
    return list;
  }
}
