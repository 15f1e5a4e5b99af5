// Contract suites, one per extension point: the behaviour every plugin of a kind must show,
// checked against the plugin signed in through the kernel's real sign-in. Framework-neutral;
// `svc/testing` adds a tap adapter and helpers for authors.
//
// API (stable; outside plugin packages use it through `svc/testing`):
//
//   runContract(kind, subject, harness, options?) → Promise<ContractReport>
//       subject: a plugin object (definePlugin) or a module path, as config would name it.
//       harness: the kind's harness (ProviderHarness, CustodyHarness, …): the config slice
//         (`config(scope)`), an optional `prepare(instance, scope)`, `skip`, and the kind's inputs.
//       Never throws for a broken plugin: report.results has one entry per point,
//         { point, status: 'passed' | 'failed' | 'skipped', message? }, and a failed message reads
//         `<kind> "<id>" fails contract point "<point>": <reason>`.
//   assertContract(kind, subject, harness, options?) → Promise<ContractReport>
//       The same, but throws ContractError (code SVC_ERR_PLUGIN_CONTRACT) listing every failure.
//   contractSuites[kind].points → the named points ({ point, run(ctx) }) of each kind.
//
//   ProviderHarness: { config?, sign(body, secret) → headers, push: { headers, payload },
//     expected: { eventType, deliveryId, routingKey, event: { …fields } }, source, repository? }
//
// The first point of every suite is SIGN_IN_POINT ('sign-in: passes every kernel sign-in
// phase'); when it fails the other points are reported as skipped.
import type { PluginKind } from '../../../schemas/plugin.ts';
import { custodyContract, type CustodyHarness } from './custody.ts';
import { genericSourceContract, type GenericSourceHarness } from './generic-source.ts';
import { providerContract, type ProviderHarness } from './provider.ts';
import { ContractError, runSuite } from './run.ts';
import { sandboxContract, type SandboxHarness } from './sandbox.ts';
import { scalerContract, type ScalerHarness } from './scaler.ts';
import { storageContract, type StorageHarness } from './storage.ts';
import type { BaseHarness, ContractReport, ContractSubject, ContractSuite, RunContractOptions } from './types.ts';

export interface ContractHarnesses {
  provider: ProviderHarness;
  'generic-source': GenericSourceHarness;
  custody: CustodyHarness;
  sandbox: SandboxHarness;
  storage: StorageHarness;
  scaler: ScalerHarness;
}

export const contractSuites: { readonly [K in PluginKind]: ContractSuite<K, ContractHarnesses[K]> } = {
  provider: providerContract,
  'generic-source': genericSourceContract,
  custody: custodyContract,
  sandbox: sandboxContract,
  storage: storageContract,
  scaler: scalerContract,
};

export function runContract<K extends PluginKind>(
  kind: K,
  subject: ContractSubject,
  harness: ContractHarnesses[K],
  options: RunContractOptions = {},
): Promise<ContractReport> {
  // Each kind's suite and harness belong together; the union over kinds is too wide for the checker.
  const suite = contractSuites[kind] as unknown as ContractSuite<K, BaseHarness<K>>;
  return runSuite(suite, subject, harness as BaseHarness<K>, options);
}

export async function assertContract<K extends PluginKind>(
  kind: K,
  subject: ContractSubject,
  harness: ContractHarnesses[K],
  options: RunContractOptions = {},
): Promise<ContractReport> {
  const report = await runContract(kind, subject, harness, options);
  if (!report.ok) throw new ContractError(report);
  return report;
}

export { ContractError, contractFailureMessage, SIGN_IN_POINT, DEFAULT_POINT_TIMEOUT_MS } from './run.ts';
export { ContractSkip, ContractViolation, expect, expectEqual, expectFields, expectRejects, expectSvcError, eventually } from './check.ts';
export type * from './types.ts';
export { providerContract, type ProviderHarness };
export { custodyContract, type CustodyHarness };
export { genericSourceContract, genericSampleSources, GENERIC_SIGNATURE_MODES, type GenericSourceHarness, type DeclaredGenericSource } from './generic-source.ts';
export { sandboxContract, type SandboxHarness };
export { scalerContract, type ScalerHarness, type ObservedAgent } from './scaler.ts';
export { storageContract, HOSTILE_KEYS, HOSTILE_PREFIXES, type StorageHarness } from './storage.ts';
