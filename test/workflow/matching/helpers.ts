// Shared helpers of the matching tests (not a test file itself).
import type { NormalizedEvent } from '../../../schemas/event.ts';
import type { Lock } from '../../../schemas/lock.ts';
import { matchLock } from '../../../workflow/matching/match-lock.ts';
import type { FilterName, FilterVerdict, MatchOptions, WorkflowMatch, WorkflowNonMatch } from '../../../workflow/matching/types.ts';
import { normalizeGithubPayload } from '../../../plugins/providers/shared/github-payload.ts';

export const gh = (providerEvent: string, payload: unknown): NormalizedEvent => normalizeGithubPayload('github', providerEvent, payload);

export type Outcome = { matched: true; match: WorkflowMatch } | { matched: false; nonMatch: WorkflowNonMatch };

/** Match a one-workflow lock and return that workflow's outcome. */
export function outcome(lock: Lock, event: NormalizedEvent, options: MatchOptions = {}): Outcome {
  const result = matchLock(event, lock, options);
  if (result.matched.length + result.unmatched.length !== 1) throw new Error('expected a one-workflow lock');
  return result.matched[0] ? { matched: true, match: result.matched[0] } : { matched: false, nonMatch: result.unmatched[0]! };
}

export function verdictsOf(o: Outcome): FilterVerdict[] {
  return o.matched ? o.match.verdicts : o.nonMatch.reasons;
}

/** The verdict of one filter (of the given trigger, default the last one evaluated with that filter). */
export function filterVerdict(o: Outcome, filter: FilterName, trigger?: number): FilterVerdict | undefined {
  const all = verdictsOf(o).filter((v) => v.filter === filter && (trigger === undefined || v.trigger === trigger));
  return all[all.length - 1];
}

/** `pass` / `no_match` / `indeterminate` for a one-workflow lock. */
export function summary(o: Outcome): 'match' | 'no_match' | 'indeterminate' {
  return o.matched ? 'match' : o.nonMatch.verdict;
}
