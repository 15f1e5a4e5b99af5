// What the agent counts about its jobs, as an interface the job code calls whether or not the
// operator turned the metrics endpoint on (SVC_AGENT_METRICS_PORT). Off, the calls go nowhere and
// prom-client is never loaded; on, agent/metrics.ts records them (docs/metrics.md "Agent").

/** Checkout phases: the repository store's three, or `clone` for a checkout that fetches on its own. */
export type CheckoutPhase = 'store_wait' | 'fetch' | 'materialise' | 'clone';

export interface AgentTelemetry {
  /** A job reached its terminal status. */
  jobFinished(status: string): void;
  /** A warm-path job (process sandbox, not a build) found a live spare runner, or did not. */
  warmRunner(hit: boolean): void;
  checkoutPhase(phase: CheckoutPhase, seconds: number): void;
  /** The first step started: job running → first step, and how much of it waited for the runner's load. */
  firstStep(setupSeconds: number, runnerWaitSeconds: number): void;
}

export const NO_TELEMETRY: AgentTelemetry = {
  jobFinished: () => undefined,
  warmRunner: () => undefined,
  checkoutPhase: () => undefined,
  firstStep: () => undefined,
};
