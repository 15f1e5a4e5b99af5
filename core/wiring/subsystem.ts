// What a subsystem declares to the host: its id, the services it provides and needs, and how it
// starts. Generic over the context the host hands every subsystem (the orchestrator's is
// OrchestratorContext), so the graph and its checks live apart from any one server.
import type { AnyServiceRef, Provision, ServiceRef } from './service-ref.ts';

export interface SubsystemDeps {
  /** A declared need's implementation. A ref not listed in `needs` is an error. */
  get<T>(ref: ServiceRef<T>): T;
  /** A declared optional need's implementation; undefined when no subsystem provides it. */
  getOptional<T>(ref: ServiceRef<T>): T | undefined;
  /**
   * Run at stop, in reverse order of registration; this subsystem's steps run before those of
   * the subsystems it started after. Registered steps also run when a later start fails.
   */
  onStop(fn: () => Promise<void> | void): void;
}

export interface Subsystem<C> {
  /** kebab-case, unique among the subsystems started together. */
  readonly id: string;
  readonly provides?: readonly AnyServiceRef[];
  readonly needs?: readonly AnyServiceRef[];
  /** Started first when some subsystem provides them; otherwise absent, not an error. */
  readonly optionalNeeds?: readonly AnyServiceRef[];
  /** Returns one provision for each ref in `provides`, and nothing else. */
  start(ctx: C, deps: SubsystemDeps): Promise<readonly Provision[] | void>;
}
