// What `svc/plugin` exports: the surface a plugin written outside this repository builds
// against (examples/plugins/gitea is one). Only what an author needs to define a plugin and
// implement an extension point; the host, registry and sign-in stay internal, so they can change
// without breaking published plugins.
export { definePlugin, isPlugin, PLUGIN_BRAND, type PluginContext, type PluginDefinition, type SvcPlugin } from './define-plugin.ts';
export { KERNEL_VERSION } from './version.ts';
export type {
  CheckoutCredentials,
  HeaderExtraction,
  ProviderDeliveryHeaders,
  ProviderSource,
  RawDelivery,
  RepositoryRef,
  SignatureInput,
  SourceProviderExtensionPoint,
  WebhookHeaders,
} from '../extension-points/provider.ts';
export type { ExtensionPointFor, ExtensionPointTypes, PluginInstance } from '../extension-points/index.ts';
export type { NormalizedEvent, TriggerType } from '../../schemas/event.ts';
export type { PluginKind } from '../../schemas/plugin.ts';
// Errors a plugin throws carry the kernel's kinds, so each transport maps them like its own.
export {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  NotFoundError,
  RateLimitedError,
  SvcError,
  UnavailableError,
  isSvcError,
  messageOf,
} from '../errors.ts';
