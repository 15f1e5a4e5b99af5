// Step 4: the provider for a routing key: a provider plugin registered for that exact key
// first, then the one serving the key's provider type (the part before `:`). None: skipped.
import type { PluginHost } from '../../../../core/plugins/index.ts';
import type { SourceProviderExtensionPoint } from '../../../../core/extension-points/provider.ts';

export class ProviderResolver {
  readonly #byId = new Map<string, SourceProviderExtensionPoint>();
  readonly #byKind = new Map<string, SourceProviderExtensionPoint>();

  constructor(host: PluginHost) {
    for (const summary of host.list()) {
      if (summary.kind !== 'provider') continue;
      const provider = host.get('provider', summary.id);
      this.#byId.set(summary.id, provider);
      if (!this.#byKind.has(provider.providerKind)) this.#byKind.set(provider.providerKind, provider);
    }
  }

  resolve(routingKey: string): SourceProviderExtensionPoint | undefined {
    return this.#byId.get(routingKey) ?? this.#byKind.get(routingKey.split(':', 1)[0] ?? '');
  }

  kinds(): string[] {
    return [...this.#byKind.keys()];
  }
}
