// Report a contract run to a tap-style test object, passed in: nothing here imports a test
// framework. Each point becomes one assertion named for it; a failure carries the full message
// (`<kind> "<id>" fails contract point "<point>": <reason>`).
import type { PluginKind } from '../../schemas/plugin.ts';
import { runContract, type ContractHarnesses } from '../extension-points/contracts/index.ts';
import type { ContractReport, ContractSubject, RunContractOptions } from '../extension-points/contracts/types.ts';

/** The part of a tap (or tap-compatible) test object the adapter uses. */
export interface TapLike {
  pass(message: string): unknown;
  fail(message: string, extra: Record<string, unknown>): unknown;
  comment(message: string): unknown;
}

export async function tapContract<K extends PluginKind>(
  t: TapLike,
  kind: K,
  subject: ContractSubject,
  harness: ContractHarnesses[K],
  options: Omit<RunContractOptions, 'onResult'> = {},
): Promise<ContractReport> {
  return runContract(kind, subject, harness, {
    ...options,
    onResult: (result) => {
      if (result.status === 'passed') t.pass(result.point);
      else if (result.status === 'skipped') t.comment(`skipped contract point "${result.point}": ${result.message ?? ''}`);
      else t.fail(result.message ?? result.point, { error: result.error });
    },
  });
}
