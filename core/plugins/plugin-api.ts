// What `svc/plugin` exports: the surface a plugin written outside this repository builds
// against (examples/plugins/gitea is one). Only what an author needs to define a plugin and
// implement an extension point; the host, registry and sign-in stay internal, so they can change
// without breaking published plugins.
import type { ErrorCode } from '../error-codes.ts';
import {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  NotFoundError,
  SvcError,
  UnavailableError,
  type SvcErrorOptions,
} from '../errors.ts';

export { definePlugin, isPlugin, PLUGIN_BRAND, type PluginContext, type PluginDefinition, type SvcPlugin } from './define-plugin.ts';
export { KERNEL_VERSION } from './version.ts';
export type {
  CheckoutCredentials,
  HeaderExtraction,
  ProviderDeliveryHeaders,
  ProviderSource,
  RawDelivery,
  RepositoryRef,
  RunReportConclusion,
  RunReportState,
  RunStatusReport,
  RunStatusResult,
  SignatureInput,
  SourceProviderExtensionPoint,
  WebhookHeaders,
} from '../extension-points/provider.ts';
export type { ExtensionPointFor, ExtensionPointTypes, PluginInstance } from '../extension-points/index.ts';
export type { NormalizedEvent, TriggerType } from '../../schemas/event.ts';
export type { PluginKind } from '../../schemas/plugin.ts';
// Errors a plugin throws carry the kernel's kinds, so each transport maps them like its own.
export { AuthenticationError, ConflictError, InputError, NotAllowedError, NotFoundError, SvcError, UnavailableError };
export { isSvcError, messageOf, type SvcErrorOptions } from '../errors.ts';

/**
 * A code a plugin outside svc declares for itself (`SVC_ERR_GITEA_SHA`). The kernel's catalogue
 * (core/error-codes) lists svc's own codes; a published plugin cannot add to it, so its codes are
 * its own and documented with the plugin.
 */
export type PluginErrorCode = `SVC_ERR_${string}`;

const BY_KIND = {
  input: InputError,
  authentication: AuthenticationError,
  not_allowed: NotAllowedError,
  not_found: NotFoundError,
  conflict: ConflictError,
  unavailable: UnavailableError,
  internal: SvcError,
} as const;

export type PluginErrorKind = keyof typeof BY_KIND;

/**
 * An SvcError of `kind` with the plugin's own code: the kernel maps it by kind like any of its
 * own (an input error is the caller's fault, unavailable is worth a retry).
 */
export function pluginError(kind: PluginErrorKind, code: PluginErrorCode, message: string, options: SvcErrorOptions = {}): SvcError {
  if (!/^SVC_ERR_[A-Z0-9]+(_[A-Z0-9]+)*$/.test(code)) throw new TypeError(`plugin error code "${code}" is not of the form SVC_ERR_<AREA>_<WHAT>`);
  // Outside the catalogue by design (see PluginErrorCode).
  return new BY_KIND[kind](code as ErrorCode, message, options);
}
