// The scaler contract (points are filled in next).
import type { BaseHarness, ContractPoint, ContractSuite } from './types.ts';

export interface ScalerHarness extends BaseHarness<'scaler'> {}

const points: ContractPoint<'scaler', ScalerHarness>[] = [];

export const scalerContract: ContractSuite<'scaler', ScalerHarness> = { kind: 'scaler', points };
