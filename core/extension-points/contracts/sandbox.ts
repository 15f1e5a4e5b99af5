// The sandbox contract (points are filled in next).
import type { BaseHarness, ContractPoint, ContractSuite } from './types.ts';

export interface SandboxHarness extends BaseHarness<'sandbox'> {}

const points: ContractPoint<'sandbox', SandboxHarness>[] = [];

export const sandboxContract: ContractSuite<'sandbox', SandboxHarness> = { kind: 'sandbox', points };
