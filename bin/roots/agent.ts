import { notAvailable } from './not-yet.ts';

export async function main(): Promise<number> {
  return notAvailable('svc-agent', 'the agent');
}
