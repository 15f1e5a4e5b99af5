import { notAvailable } from './not-yet.ts';

export async function main(): Promise<number> {
  return notAvailable('svc-relay', 'the Platform relay');
}
