// Orders subsystems from what they provide and need, before any of them starts. Refuses, naming
// the culprit: two subsystems with one id, a service provided twice, a need nobody provides, a
// dependency cycle (with its path). Among subsystems free to start, declaration order wins, so
// the same list always starts the same way.
import { SvcError } from '../errors.ts';
import type { AnyServiceRef } from './service-ref.ts';

/** The declaration part of a subsystem: all the graph looks at. */
export interface GraphNode {
  readonly id: string;
  readonly provides?: readonly AnyServiceRef[];
  readonly needs?: readonly AnyServiceRef[];
  readonly optionalNeeds?: readonly AnyServiceRef[];
}

/** Map of ref id → id of the subsystem providing it. */
function providersOf(nodes: readonly GraphNode[]): Map<string, string> {
  const seen = new Set<string>();
  const providers = new Map<string, string>();
  for (const node of nodes) {
    if (seen.has(node.id)) throw new SvcError('SVC_ERR_WIRING_SUBSYSTEM_DUPLICATE', `two subsystems are named '${node.id}': subsystem ids must be unique`, { details: { subsystem: node.id } });
    seen.add(node.id);
    for (const ref of node.provides ?? []) {
      const other = providers.get(ref.id);
      if (other !== undefined) {
        throw new SvcError('SVC_ERR_WIRING_PROVIDED_TWICE', `'${ref.id}' is provided by both subsystem '${other}' and subsystem '${node.id}': start only one of them`, {
          details: { ref: ref.id, subsystems: [other, node.id] },
        });
      }
      providers.set(ref.id, node.id);
    }
  }
  return providers;
}

/** Each subsystem's dependencies (subsystem id → [ref id, provider id]), in declaration order. */
function edgesOf(nodes: readonly GraphNode[], providers: Map<string, string>): Map<string, Array<[string, string]>> {
  const edges = new Map<string, Array<[string, string]>>();
  for (const node of nodes) {
    const out: Array<[string, string]> = [];
    for (const ref of node.needs ?? []) {
      const provider = providers.get(ref.id);
      if (provider === undefined) {
        throw new SvcError('SVC_ERR_WIRING_NEED_MISSING', `subsystem '${node.id}' needs '${ref.id}', which no subsystem provides`, { details: { subsystem: node.id, ref: ref.id } });
      }
      out.push([ref.id, provider]);
    }
    for (const ref of node.optionalNeeds ?? []) {
      const provider = providers.get(ref.id);
      if (provider !== undefined) out.push([ref.id, provider]);
    }
    edges.set(node.id, out);
  }
  return edges;
}

/** Walks unmet dependencies from a stuck subsystem until one repeats: that loop is the cycle. */
function cycleError(start: string, edges: Map<string, Array<[string, string]>>, started: Set<string>): SvcError {
  const path: string[] = [];
  const via: string[] = [];
  let at = start;
  while (!path.includes(at)) {
    path.push(at);
    // A stuck subsystem always has a dependency that has not started.
    const [ref, next] = edges.get(at)!.find(([, provider]) => !started.has(provider))!;
    via.push(ref);
    at = next;
  }
  const from = path.indexOf(at);
  const loop = [...path.slice(from), at];
  const because = path.slice(from).map((id, i) => `'${id}' needs '${via[from + i]}' from '${loop[i + 1]}'`);
  return new SvcError('SVC_ERR_WIRING_CYCLE', `dependency cycle: ${loop.join(' → ')} (${because.join('; ')})`, { details: { cycle: loop } });
}

/** The subsystems in start order; throws an SvcError naming what makes the graph unusable. */
export function orderSubsystems<N extends GraphNode>(nodes: readonly N[]): N[] {
  const edges = edgesOf(nodes, providersOf(nodes));
  const started = new Set<string>();
  const order: N[] = [];
  while (order.length < nodes.length) {
    const next = nodes.find((node) => !started.has(node.id) && edges.get(node.id)!.every(([, provider]) => started.has(provider)));
    if (next === undefined) throw cycleError(nodes.find((node) => !started.has(node.id))!.id, edges, started);
    started.add(next.id);
    order.push(next);
  }
  return order;
}
