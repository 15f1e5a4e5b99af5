// Generic webhook source extension point (spec "Generic webhook extras"): arbitrary JSON from
// any sender, with per-source settings for signature, limits and where the event type and
// delivery id live. The kernel enforces the settings; the plugin reads and normalizes.
import type { GenericSourceConfig } from '../../schemas/plugin.ts';
import { createExtensionPointRef, type PluginInstance } from './ref.ts';
import type { WebhookHeaders } from './provider.ts';

export type { GenericSourceConfig } from '../../schemas/plugin.ts';

export interface GenericDelivery {
  orgId: string;
  sourceId: string;
  headers: WebhookHeaders;
  /** Exact body bytes (signatures are over these). */
  body: Uint8Array;
  /** The body parsed as JSON. */
  payload: unknown;
  remoteAddress: string;
}

export interface GenericSourceExtensionPoint extends PluginInstance {
  /** Validated settings for one source, or null when the org has no such source. */
  sourceConfig(orgId: string, sourceId: string): Promise<GenericSourceConfig | null>;
  /** User-defined event name, read where the settings say; null when absent. */
  eventType(config: GenericSourceConfig, delivery: GenericDelivery): string | null;
  /** Delivery id, read where the settings say; null means the kernel generates a UUID. */
  deliveryId(config: GenericSourceConfig, delivery: GenericDelivery): string | null;
  /** Normalized event; shape owned by schemas/event.ts, validated by the kernel. */
  normalize(config: GenericSourceConfig, delivery: GenericDelivery, eventType: string): unknown;
}

export const genericSourceExtensionPoint = createExtensionPointRef<GenericSourceExtensionPoint>()({
  id: 'generic-sources',
  kind: 'generic-source',
  members: {
    sourceConfig: 'function',
    eventType: 'function',
    deliveryId: 'function',
    normalize: 'function',
  },
});
