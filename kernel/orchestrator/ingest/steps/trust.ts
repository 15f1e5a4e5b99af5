// Step 8: trust of the event. A pull request from a fork is `unknown`, one from the same
// repository `trusted`; an untrusted pull request takes the lock from its base commit (the head
// could rewrite the workflows it runs), and the head's lock is compared with it so the run
// records `workflow_modified`. The source's fork switch `ignore` drops fork deliveries.
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { Lock } from '../../../../schemas/lock.ts';
import { canonicalStringify } from '../../../../workflow/lock/canonical-json.ts';
import type { TrustTier } from '../types.ts';

export interface Trust {
  tier: TrustTier;
  isFork: 'true' | 'false' | 'unresolved';
  /** Commit to read the lock at; null when the event names none. */
  lockSha: string | null;
  /** An untrusted pull request: also read the head's lock and compare. */
  compareHeadSha: string | null;
}

/** Events only someone with write access to the repository can cause. */
const WRITER_EVENTS = new Set(['push', 'tag', 'create', 'delete', 'release', 'dispatch']);

export function resolveTrust(event: NormalizedEvent): Trust {
  const pr = event.pullRequest;
  if (pr !== null) {
    if (pr.isFork) return { tier: 'unknown', isFork: 'true', lockSha: pr.baseSha || null, compareHeadSha: pr.headSha || null };
    return { tier: 'trusted', isFork: 'false', lockSha: event.sha ?? (pr.headSha || null), compareHeadSha: null };
  }
  const sha = event.deleted ? null : event.sha;
  if (event.type !== null && WRITER_EVENTS.has(event.type)) return { tier: 'trusted', isFork: 'false', lockSha: sha, compareHeadSha: null };
  return { tier: 'unresolved', isFork: 'unresolved', lockSha: sha, compareHeadSha: null };
}

/** Whether the workflows part of two locks differs (a missing head lock counts as a change). */
export function workflowsDiffer(base: Lock, head: Lock | null): boolean {
  if (head === null) return true;
  const key = (lock: Lock) => canonicalStringify([...lock.workflows].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
  return key(base) !== key(head);
}
