// Scaler extension point: starts and stops ephemeral agents for queued work (spec "Internal
// events": the scale-up event carries `mandatoryLabels`, the full gate the spawned agent
// registers with).
import { createExtensionPointRef, type PluginInstance } from './ref.ts';

export interface ScaleUpRequest {
  /** Labels the new agent must register with (the job's whole `runsOn` gate). */
  mandatoryLabels: readonly string[];
  /** How many agents to start, ≥ 1. */
  count: number;
  /** Correlation for logs (job or event id). */
  reason?: string;
}

export interface ScaleUpResult {
  /** Ids of agents the scaler started or asked for; fewer than `count` when at capacity. */
  agentIds: string[];
}

export interface ScaleDownRequest {
  /** Agents to stop; they finish or hand back in-flight work first. */
  agentIds: readonly string[];
}

export interface ScalerCapacity {
  /** Agents running or starting. */
  current: number;
  /** Of which still starting. */
  pending: number;
  /** Upper bound this scaler will go to. */
  max: number;
}

export interface ScalerExtensionPoint extends PluginInstance {
  scaleUp(request: ScaleUpRequest): Promise<ScaleUpResult>;
  scaleDown(request: ScaleDownRequest): Promise<{ stopped: string[] }>;
  capacity(): Promise<ScalerCapacity>;
}

export const scalerExtensionPoint = createExtensionPointRef<ScalerExtensionPoint>()({
  id: 'scalers',
  kind: 'scaler',
  members: {
    scaleUp: 'function',
    scaleDown: 'function',
    capacity: 'function',
  },
});
