// `svc endpoints [--json]`: the webhook ingest endpoints the Platform relay serves for the org,
// one per source an orchestrator registered: the URL to configure at the provider, the provider
// kind, the routing key and how the orchestrator verifies deliveries (never a secret).
import type { EndpointList } from '../../schemas/http/org.ts';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { formatTable } from '../table.ts';

export interface EndpointsOutput {
  endpoints: Array<EndpointList['endpoints'][number] & { url: string }>;
}

export default class Endpoints extends SvcCommand {
  static override description = 'List the webhook ingest endpoints the Platform relay serves for the org: URL per source and provider';
  static override examples = ['<%= config.bin %> endpoints', '<%= config.bin %> endpoints --json'];

  async run(): Promise<EndpointsOutput> {
    await this.parse(Endpoints);
    const { PlatformClient } = await import('../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const list = await client.endpoints();
    const endpoints = list.endpoints.map((e) => ({ ...e, url: `${client.platformUrl}${e.path}` }));
    if (!this.jsonEnabled()) {
      if (endpoints.length === 0) this.log(`no webhook source of ${client.org} is registered at the Platform (an orchestrator registers its sources when it connects)`);
      else for (const line of formatTable(['PROVIDER', 'URL', 'ROUTING KEY', 'VERIFIED BY'], endpoints.map((e) => [e.providerKind, e.url, e.routingKey, e.signatureMode ?? '-']))) this.log(line);
    }
    return { endpoints };
  }
}
