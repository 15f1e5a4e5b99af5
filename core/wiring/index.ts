// Subsystems wired by typed references (architecture: "the host checks the graph at boot").
//
// Public API:
//   createServiceRef<T>(id) → ServiceRef<T>        a named, typed service
//   provide(ref, impl) → Provision                  what a start returns for each provided ref
//   Subsystem<C>, SubsystemDeps                     { id, provides, needs, optionalNeeds, start(ctx, deps) }
//   orderSubsystems(subsystems)                     start order; SvcError on a missing need, a ref
//                                                   provided twice, a duplicate id or a cycle
//   startSubsystems(subsystems, ctx, logger?)       → { order, get(ref), has(ref), stop() }
export { createServiceRef, provide, type ServiceRef, type AnyServiceRef, type Provision } from './service-ref.ts';
export type { Subsystem, SubsystemDeps } from './subsystem.ts';
export { orderSubsystems, type GraphNode } from './graph.ts';
export { startSubsystems, type StartedSubsystems } from './start.ts';
