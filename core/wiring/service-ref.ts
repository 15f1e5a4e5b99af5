// Typed references to the services subsystems provide each other. A ref is a name plus a
// phantom type: a subsystem declares the refs it provides and needs, the graph is checked before
// anything starts, and `deps.get(ref)` hands back the right interface without a cast.
// Refs are compared by id, so two copies of a module still name the same service.

export interface ServiceRef<T> {
  /** Unique name of the service in the graph (`dispatch`, `ingest-pipeline`, …). */
  readonly id: string;
  /** Phantom: never set at run time; carries the service's type. */
  readonly $type?: T;
}

/** A ref whose service type does not matter here (declarations, graph checks). */
export type AnyServiceRef = ServiceRef<any>;

export function createServiceRef<T>(id: string): ServiceRef<T> {
  if (!/^[a-z][a-z0-9-]*$/.test(id)) throw new TypeError(`service ref id ${JSON.stringify(id)} must be kebab-case`);
  return Object.freeze({ id });
}

/** One provided implementation, as a subsystem's start returns it. */
export interface Provision {
  readonly ref: AnyServiceRef;
  readonly impl: unknown;
}

/** Pairs a ref with its implementation; the type parameter keeps the two in agreement. */
export function provide<T>(ref: ServiceRef<T>, impl: T): Provision {
  return { ref, impl };
}
