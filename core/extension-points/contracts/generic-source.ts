// The generic-source contract (points are filled in next).
import type { BaseHarness, ContractPoint, ContractSuite } from './types.ts';

export interface GenericSourceHarness extends BaseHarness<'generic-source'> {}

const points: ContractPoint<'generic-source', GenericSourceHarness>[] = [];

export const genericSourceContract: ContractSuite<'generic-source', GenericSourceHarness> = { kind: 'generic-source', points };
