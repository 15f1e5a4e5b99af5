// Whether this orchestrator is linked to a relay and the link is up, for the node's debug
// information (cluster/debug.ts) without a service dependency on the relay-link subsystem
// (which starts last). Kept per orchestrator context: one process may run several in tests.
import type { OrchestratorContext } from '../context.ts';

export interface RelayLinkState {
  /** `platform.url` is set: the node serves webhooks through the relay. */
  configured: boolean;
  connected: boolean;
  platformUrl?: string;
}

const states = new WeakMap<object, () => RelayLinkState>();

export function publishRelayLinkState(ctx: OrchestratorContext, read: () => RelayLinkState): void {
  states.set(ctx, read);
}

export function relayLinkStateOf(ctx: OrchestratorContext): RelayLinkState {
  const read = states.get(ctx);
  if (read !== undefined) return read();
  return { configured: ctx.config.platform.url !== undefined, connected: false };
}
