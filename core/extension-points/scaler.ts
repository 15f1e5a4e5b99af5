// Scaler extension point: starts and stops ephemeral agents for queued work (spec "Internal
// events": the scale-up event carries `mandatoryLabels`, the full gate the spawned agent
// registers with).
import { InputError } from '../errors.ts';
import { createExtensionPointRef, type PluginInstance } from './ref.ts';

export interface ScaleUpRequest {
  /**
   * Custom labels the new agent must register with (the scaler entry's `labels`; pass them as
   * SVC_AGENT_LABELS). The orchestrator checks the whole gate at registration: these plus the
   * entry's auto labels (os, arch, ephemeral role, sandboxes), the scale-up event's `mandatoryLabels`.
   */
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

/** Throws InputError (`SVC_ERR_SCALER_REQUEST_INVALID`) unless `request` asks for ≥ 1 agent with string labels. */
export function assertScaleUpRequest(request: ScaleUpRequest): void {
  const { count, mandatoryLabels } = request;
  if (!Number.isInteger(count) || count < 1) {
    throw new InputError('SVC_ERR_SCALER_REQUEST_INVALID', `scale-up request is invalid: count must be an integer of at least 1, got ${String(count)}`);
  }
  if (!Array.isArray(mandatoryLabels) || !mandatoryLabels.every((l) => typeof l === 'string' && l !== '')) {
    throw new InputError('SVC_ERR_SCALER_REQUEST_INVALID', 'scale-up request is invalid: mandatoryLabels must be non-empty strings');
  }
}
