// Reconnect delays: exponential from `baseMs`, capped at `maxMs`, with "equal jitter" (half
// fixed, half random) so a fleet of agents that lost the same orchestrator does not reconnect
// in lockstep, while every agent still waits at least half the current step.
export interface BackoffOptions {
  baseMs?: number;
  maxMs: number;
  random?: () => number;
}

export function backoffDelay(attempt: number, options: BackoffOptions): number {
  const base = options.baseMs ?? 500;
  const ceiling = Math.min(options.maxMs, base * 2 ** Math.min(attempt, 30));
  const random = options.random ?? Math.random;
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
