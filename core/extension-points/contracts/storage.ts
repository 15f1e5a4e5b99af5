// The storage contract (points are filled in next).
import type { BaseHarness, ContractPoint, ContractSuite } from './types.ts';

export interface StorageHarness extends BaseHarness<'storage'> {}

const points: ContractPoint<'storage', StorageHarness>[] = [];

export const storageContract: ContractSuite<'storage', StorageHarness> = { kind: 'storage', points };
