// The six kinds and their interfaces, for the host and for callers of the registry.
import type { PluginKind } from '../../schemas/plugin.ts';
import { custodyExtensionPoint, type CustodyExtensionPoint } from './custody.ts';
import { genericSourceExtensionPoint, type GenericSourceExtensionPoint } from './generic-source.ts';
import { sourceProviderExtensionPoint, type SourceProviderExtensionPoint } from './provider.ts';
import type { ExtensionPointRef } from './ref.ts';
import { sandboxExtensionPoint, type SandboxExtensionPoint } from './sandbox.ts';
import { scalerExtensionPoint, type ScalerExtensionPoint } from './scaler.ts';
import { storageExtensionPoint, type StorageExtensionPoint } from './storage.ts';

/** Interface a plugin of each kind implements. */
export interface ExtensionPointTypes {
  provider: SourceProviderExtensionPoint;
  'generic-source': GenericSourceExtensionPoint;
  custody: CustodyExtensionPoint;
  sandbox: SandboxExtensionPoint;
  storage: StorageExtensionPoint;
  scaler: ScalerExtensionPoint;
}

export type ExtensionPointFor<K extends PluginKind> = ExtensionPointTypes[K];

export const extensionPoints: { readonly [K in PluginKind]: ExtensionPointRef<K, ExtensionPointTypes[K]> } = {
  provider: sourceProviderExtensionPoint,
  'generic-source': genericSourceExtensionPoint,
  custody: custodyExtensionPoint,
  sandbox: sandboxExtensionPoint,
  storage: storageExtensionPoint,
  scaler: scalerExtensionPoint,
};

export { createExtensionPointRef, type ExtensionPointRef, type PluginInstance, type MemberType } from './ref.ts';
export { custodyExtensionPoint, sourceProviderExtensionPoint, genericSourceExtensionPoint, sandboxExtensionPoint };
export { scalerExtensionPoint, storageExtensionPoint };
export type { CustodyExtensionPoint, SourceProviderExtensionPoint, GenericSourceExtensionPoint, SandboxExtensionPoint };
export type { ScalerExtensionPoint, StorageExtensionPoint };
