// A job's `routing` (lock `LockRouting`): soft placement among the agents that already satisfy
// its `runsOn`. The spec names "label routing" and no more, so the meaning is ours
// (docs/agent.md "Routing"):
//   prefer  agents on which any `prefer` matcher holds are picked before the others;
//   avoid   agents on which any `avoid` matcher holds are picked only when no other matching
//           agent is free.
// Avoid weighs more than prefer. Neither filters: a job any matching agent can take is never made
// to wait or to fail by its routing. Matchers are the `runsOn` ones (`label`, `!label`, `prefix*`).
import { holds, parseMatcher } from './labels.ts';

export interface JobRouting {
  prefer: readonly string[];
  avoid: readonly string[];
}

const anyHolds = (matchers: readonly string[], labels: ReadonlySet<string>): boolean => matchers.some((m) => holds(parseMatcher(m), labels));

/** 0 is best: not avoided and preferred; 3 is worst: avoided and not preferred. */
export function routingRank(routing: JobRouting | null | undefined, labels: ReadonlySet<string> | readonly string[]): number {
  if (routing === null || routing === undefined || (routing.prefer.length === 0 && routing.avoid.length === 0)) return 0;
  const set = labels instanceof Set ? labels : new Set(labels as readonly string[]);
  return (anyHolds(routing.avoid, set) ? 2 : 0) + (routing.prefer.length > 0 && !anyHolds(routing.prefer, set) ? 1 : 0);
}

/**
 * The best-ranked candidate, keeping the callers' order among equals (the dispatcher's idle
 * agents least recently dispatched first; scalers in config order). Undefined only when there is
 * no candidate at all.
 */
export function pickByRouting<T>(candidates: readonly T[], labelsOf: (c: T) => ReadonlySet<string> | readonly string[], routing: JobRouting | null | undefined): T | undefined {
  let best: T | undefined;
  let bestRank = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const rank = routingRank(routing, labelsOf(candidate));
    if (rank < bestRank) {
      best = candidate;
      bestRank = rank;
      if (rank === 0) break;
    }
  }
  return best;
}

/** Candidates best-ranked first, stable among equals. */
export function orderByRouting<T>(candidates: readonly T[], labelsOf: (c: T) => ReadonlySet<string> | readonly string[], routing: JobRouting | null | undefined): T[] {
  if (routing === null || routing === undefined) return [...candidates];
  return candidates
    .map((c, i) => ({ c, i, rank: routingRank(routing, labelsOf(c)) }))
    .sort((a, b) => a.rank - b.rank || a.i - b.i)
    .map((x) => x.c);
}

/** The routing of a queue row (`jobs.definition` or the lock entry), or null when it has none. */
export function routingOf(value: unknown): JobRouting | null {
  if (value === null || typeof value !== 'object') return null;
  const r = value as { prefer?: unknown; avoid?: unknown };
  const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const routing = { prefer: list(r.prefer), avoid: list(r.avoid) };
  return routing.prefer.length + routing.avoid.length === 0 ? null : routing;
}
