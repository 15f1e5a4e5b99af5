// Regular-expression commit-message filters (steps 11 and 12): a workflow's author writes them,
// so they are never run on the orchestrator's event loop. Before the synchronous match, every
// expression the event would test is run against its commit message on the regex guard's
// worker, each under a time bound, and the matcher reads the outcomes (`regexResults`). One
// that overruns makes its filter indeterminate, naming the bound: that workflow does not run,
// the delivery record says why, and ingest keeps answering.
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { MessageRegex, RegexResult } from '../../../../workflow/matching/index.ts';
import { LRUCache } from 'lru-cache';
import { sharedRegexGuard, sharedSuspectRegexGuard, type RegexGuard } from '../regex-guard.ts';

/** Per expression and commit message. Far above any sane expression's time on a commit message. */
export const COMMIT_MESSAGE_REGEX_TIMEOUT_MS = 100;

export interface MessageRegexOptions {
  /** Default: the process's shared guard. */
  guard?: RegexGuard;
  /** For expressions that overran recently. Default: the process's suspect guard, or `guard` when one is given. */
  suspectGuard?: RegexGuard;
  /** Default COMMIT_MESSAGE_REGEX_TIMEOUT_MS. */
  timeoutMs?: number;
}

// Expressions (flags/source) that overran their bound in the last ten minutes. The guard runs
// one expression at a time, so a repository whose every push carries a catastrophic one held its
// worker for the whole bound each time and every other repository's expressions waited behind it
// (bench/commit-message-regex.ts). These go to a worker of their own; each is still tested,
// under its bound, on every event.
const overran = new LRUCache<string, true>({ max: 1000, ttl: 10 * 60_000 });

// The changed-files probe (step 11) and the match (step 12) test the same expressions on the
// same event: each is run once per event (and an overrunning one costs its bound once).
const evaluated = new WeakMap<NormalizedEvent, Map<string, Promise<RegexResult>>>();

/**
 * The outcome of each expression on the event's commit message, by key, for
 * `MatchOptions.regexResults`. Empty when the event carries no commit message: the matcher then
 * reports that without testing anything.
 */
export async function messageRegexResults(event: NormalizedEvent, regexes: readonly MessageRegex[], options: MessageRegexOptions = {}): Promise<Map<string, RegexResult>> {
  const message = event.commitMessage;
  const results = new Map<string, RegexResult>();
  if (message === null || regexes.length === 0) return results;
  const guard = options.guard ?? sharedRegexGuard();
  const suspectGuard = options.suspectGuard ?? options.guard ?? sharedSuspectRegexGuard();
  const timeoutMs = options.timeoutMs ?? COMMIT_MESSAGE_REGEX_TIMEOUT_MS;
  let known = evaluated.get(event);
  if (known === undefined) {
    known = new Map();
    evaluated.set(event, known);
  }
  const pending = regexes.map(async (regex) => {
    let outcome = known.get(regex.key);
    if (outcome === undefined) {
      const expression = `${regex.flags}/${regex.source}`;
      const lane = overran.has(expression) ? suspectGuard : guard;
      outcome = lane.test(regex.source, regex.flags, message, timeoutMs).then((r): RegexResult => {
        if (r.ok) return r.matched;
        if (r.reason === 'timeout') overran.set(expression, true);
        return { undecided: r.reason === 'timeout' ? `took longer than ${timeoutMs} ms` : `could not be tested (${r.message})` };
      });
      known.set(regex.key, outcome);
    }
    results.set(regex.key, await outcome);
  });
  await Promise.all(pending);
  return results;
}
