// Public surface of the plugin host.
export { KERNEL_VERSION } from './version.ts';
export { definePlugin, isPlugin, PLUGIN_BRAND, type PluginContext, type PluginDefinition, type SvcPlugin } from './define-plugin.ts';
export { PluginSignInError, SIGN_IN_PHASES, type SignInPhase } from './errors.ts';
export { PluginHost, createPluginHost, type PluginHostOptions, type SignInAllRequest } from './host.ts';
export type { PluginSummary, RegisteredPlugin } from './registry.ts';
export { DEFAULT_CREATE_TIMEOUT_MS, type PhaseReport } from './sign-in.ts';
export { verifyPluginModule, type PluginVerifyReport, type VerifyPhaseReport, type VerifyPluginOptions } from './verify.ts';
export * from '../extension-points/index.ts';
