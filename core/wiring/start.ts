// Starts subsystems in graph order, hands each the services it declared, and stops them in
// reverse. A start that fails stops what already started (its own registered steps included)
// and rethrows; a stop step that fails is logged and the others still run.
import type { Logger } from 'pino';
import { SvcError } from '../errors.ts';
import { orderSubsystems } from './graph.ts';
import type { Provision, ServiceRef } from './service-ref.ts';
import type { Subsystem, SubsystemDeps } from './subsystem.ts';

export interface StartedSubsystems {
  /** Subsystem ids in the order they started. */
  readonly order: readonly string[];
  /** A started subsystem's service; an SvcError naming the ref when none provides it. */
  get<T>(ref: ServiceRef<T>): T;
  /** Whether some started subsystem provides `ref`. */
  has(ref: ServiceRef<unknown>): boolean;
  /** Runs every stop step, last-started subsystem first. Safe to call twice. */
  stop(): Promise<void>;
}

type StopStep = () => Promise<void> | void;

function depsFor(subsystem: Subsystem<unknown>, services: Map<string, unknown>, stops: StopStep[]): SubsystemDeps {
  const needs = new Set((subsystem.needs ?? []).map((ref) => ref.id));
  const optional = new Set((subsystem.optionalNeeds ?? []).map((ref) => ref.id));
  return {
    get<T>(ref: ServiceRef<T>): T {
      if (!needs.has(ref.id)) throw new SvcError('SVC_ERR_WIRING_UNDECLARED_NEED', `subsystem '${subsystem.id}' asked for '${ref.id}' without declaring it in needs`, { details: { subsystem: subsystem.id, ref: ref.id } });
      return services.get(ref.id) as T;
    },
    getOptional<T>(ref: ServiceRef<T>): T | undefined {
      if (!optional.has(ref.id) && !needs.has(ref.id)) {
        throw new SvcError('SVC_ERR_WIRING_UNDECLARED_NEED', `subsystem '${subsystem.id}' asked for '${ref.id}' without declaring it in optionalNeeds`, { details: { subsystem: subsystem.id, ref: ref.id } });
      }
      return services.get(ref.id) as T | undefined;
    },
    onStop: (fn) => stops.push(fn),
  };
}

/** Checks that a start returned exactly what its subsystem declared it provides. */
function record(subsystem: Subsystem<unknown>, provided: readonly Provision[], services: Map<string, unknown>): void {
  const declared = new Set((subsystem.provides ?? []).map((ref) => ref.id));
  for (const { ref, impl } of provided) {
    if (!declared.has(ref.id)) throw new SvcError('SVC_ERR_WIRING_UNDECLARED_PROVISION', `subsystem '${subsystem.id}' returned '${ref.id}', which it does not declare in provides`, { details: { subsystem: subsystem.id, ref: ref.id } });
    declared.delete(ref.id);
    services.set(ref.id, impl);
  }
  const [missing] = declared;
  if (missing !== undefined) throw new SvcError('SVC_ERR_WIRING_NOT_PROVIDED', `subsystem '${subsystem.id}' declares it provides '${missing}' but its start did not return it`, { details: { subsystem: subsystem.id, ref: missing } });
}

async function runStops(steps: StopStep[], logger: Logger | undefined, id: string): Promise<void> {
  for (const step of steps.reverse()) {
    try {
      await step();
    } catch (error) {
      logger?.warn({ err: error, subsystem: id }, 'a subsystem stop step failed');
    }
  }
  steps.length = 0;
}

/** Orders (refusing a broken graph before anything starts), then starts each subsystem. */
export async function startSubsystems<C>(subsystems: readonly Subsystem<C>[], ctx: C, logger?: Logger): Promise<StartedSubsystems> {
  const ordered = orderSubsystems(subsystems);
  const services = new Map<string, unknown>();
  const started: Array<{ id: string; stops: StopStep[] }> = [];
  const stop = async (): Promise<void> => {
    for (const entry of started.reverse()) await runStops(entry.stops, logger, entry.id);
    started.length = 0;
  };
  for (const subsystem of ordered) {
    const entry = { id: subsystem.id, stops: [] as StopStep[] };
    started.push(entry);
    try {
      const provided = await subsystem.start(ctx, depsFor(subsystem as Subsystem<unknown>, services, entry.stops));
      record(subsystem as Subsystem<unknown>, provided ?? [], services);
    } catch (error) {
      await stop();
      throw error;
    }
    logger?.debug({ subsystem: subsystem.id }, 'subsystem started');
  }
  return {
    order: ordered.map((s) => s.id),
    get<T>(ref: ServiceRef<T>): T {
      if (!services.has(ref.id)) throw new SvcError('SVC_ERR_WIRING_NOT_STARTED', `no started subsystem provides '${ref.id}'`, { details: { ref: ref.id } });
      return services.get(ref.id) as T;
    },
    has: (ref) => services.has(ref.id),
    stop,
  };
}
