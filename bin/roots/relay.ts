// Composition root of `svc-relay`: the Platform relay.
import { startRelay } from '../../kernel/relay/index.ts';
import { runServerProgram } from '../../core/lifecycle.ts';

export async function main(): Promise<number> {
  return runServerProgram('svc-relay', () => startRelay());
}
