// `svc orchestrators [--json]`: the orchestrators of the org connected to the Platform relay right
// now (id, connected since, software version, last frame or heartbeat seen). The relay answers
// from its own sockets; an empty list means Platform commands that need an orchestrator fail.
import type { OrchestratorList } from '../../schemas/http/org.ts';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { formatTable } from '../table.ts';

export default class Orchestrators extends SvcCommand {
  static override description = "List the org's orchestrators connected to the Platform relay: id, connected since, version, last seen";
  static override examples = ['<%= config.bin %> orchestrators', '<%= config.bin %> orchestrators --json'];

  async run(): Promise<OrchestratorList> {
    await this.parse(Orchestrators);
    const { PlatformClient } = await import('../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const list = await client.orchestrators();
    if (!this.jsonEnabled()) {
      if (list.orchestrators.length === 0) this.log(`no orchestrator of ${client.org} is connected to the Platform (runs show, logs, secrets and notifications need one)`);
      else for (const line of formatTable(['ORCHESTRATOR', 'CONNECTED', 'VERSION', 'LAST SEEN'], list.orchestrators.map((o) => [o.orchestratorId, o.connectedAt, o.version ?? '-', o.lastSeenAt]))) this.log(line);
    }
    return list;
  }
}
