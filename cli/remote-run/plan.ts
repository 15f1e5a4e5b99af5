// What one fixture runs remotely: the event its trigger describes, built from the local checkout
// the way `svc preview` builds one (with the fixture's branch, sha, repo and pull-request
// overrides), matched against the lock compiled in memory from the working tree — the overlaid
// tree the agents will run, so an uncommitted change to a workflow takes effect.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { InputError } from '../../core/errors.ts';
import { evaluateRequirements, matchLock, type WorkflowMatch } from '../../workflow/matching/index.ts';
import type { NormalizedEvent } from '../../schemas/event.ts';
import type { Lock, LockWorkflow } from '../../schemas/lock.ts';
import type { FixtureOptions } from '../../sdk/fixture.ts';
import { buildPreviewEvent, type PreviewEventKind, type PreviewEventSpec } from '../preview/local-event.ts';
import type { LocalGitState } from '../preview/local-git-state.ts';

const SIMULATED = new Set<string>(['push', 'pr', 'tag', 'release', 'comment', 'review', 'review_comment', 'dispatch', 'create', 'delete', 'status', 'fork', 'star', 'watch', 'schedule', 'event', 'webhook']);

export interface FixturePlan {
  event: NormalizedEvent;
  repository: string;
  sha: string;
  ref: string | null;
  changedFiles: string[] | null;
  matched: LockWorkflow[];
  unmatched: Array<{ workflow: string; reason: string }>;
}

function first(values: unknown): string | undefined {
  return Array.isArray(values) && typeof values[0] === 'string' ? values[0] : undefined;
}

/** The fixture's trigger as the event form `svc preview` builds (its first action, tag or name). */
export function eventSpecOf(trigger: { type: string; options?: Record<string, unknown> }): PreviewEventSpec {
  if (!SIMULATED.has(trigger.type)) throw new InputError('SVC_ERR_FIXTURE_EVENT', `a fixture cannot simulate a "${trigger.type}" event; use a provider, event or webhook trigger`);
  const o = trigger.options ?? {};
  const kind = trigger.type as PreviewEventKind;
  let qualifier: string | undefined;
  if (kind === 'pr' || kind === 'comment' || kind === 'release' || kind === 'review_comment') qualifier = first(o['actions']);
  else if (kind === 'review') qualifier = first(o['states']);
  else if (kind === 'tag') qualifier = first(o['tags']);
  else if (kind === 'event') qualifier = typeof o['name'] === 'string' ? o['name'] : undefined;
  else if (kind === 'webhook') qualifier = first(o['events']);
  // A glob is no tag name; the latest tag stands in.
  if (qualifier !== undefined && /[*?[\]{}!\s]/.test(qualifier)) qualifier = undefined;
  if ((kind === 'event' || kind === 'webhook') && qualifier === undefined) throw new InputError('SVC_ERR_FIXTURE_EVENT', `a ${kind} fixture needs a name`);
  return qualifier === undefined ? { kind } : { kind, qualifier };
}

export async function planFixture(options: FixtureOptions, state: LocalGitState, lock: Lock): Promise<FixturePlan> {
  const trigger = options.event as unknown as { type: string; options?: Record<string, unknown> };
  const spec = eventSpecOf(trigger);
  const isPr = spec.kind === 'pr' || spec.kind === 'review' || spec.kind === 'review_comment';
  const sha = options.sha ?? state.sha;
  if (sha === null || !/^[0-9a-f]{40}$/.test(sha)) throw new InputError('SVC_ERR_FIXTURE_EVENT', 'the repository has no commit at HEAD (or the fixture\'s sha is not a full commit id): commit once, the overlay is applied on top of HEAD');
  const local: LocalGitState = {
    ...state,
    sha,
    repository: options.repo ?? state.repository,
    // A pull request's head is the fixture's branch; its base the pr.base, else the default branch.
    branch: isPr ? (options.pr?.head ?? options.branch ?? state.branch) : (options.branch ?? state.branch),
  };
  const built = buildPreviewEvent(spec, local, isPr ? { ...(options.pr?.base !== undefined ? { branch: options.pr.base } : {}) } : {});
  const event = built.event;
  if (event.pullRequest !== null && options.pr !== undefined) {
    const pr = options.pr;
    event.pullRequest = {
      ...event.pullRequest,
      ...(pr.number !== undefined ? { number: pr.number } : {}),
      ...(pr.title !== undefined ? { title: pr.title } : {}),
      ...(pr.fork === true ? { isFork: true, headRepository: `fork/${local.repository.split('/')[1] ?? 'repository'}` } : {}),
    };
  }
  const result = matchLock(event, lock, built.options);
  const readLocal = async (file: string): Promise<string | null> => {
    const abs = path.resolve(state.top, file);
    if (path.relative(state.top, abs).startsWith('..')) return null;
    return readFile(abs, 'utf8').catch(() => null);
  };
  const matches: WorkflowMatch[] = [...result.matched];
  const unmatched: FixturePlan['unmatched'] = result.unmatched.map((u) => ({ workflow: u.workflow, reason: u.reasons.find((r) => r.verdict !== 'pass')?.detail ?? 'no trigger matched' }));
  const matched: LockWorkflow[] = [];
  for (const m of matches) {
    if (m.requires.length > 0) {
      const req = await evaluateRequirements(m.requires, readLocal);
      if (!req.ok) {
        unmatched.push({ workflow: m.workflow, reason: `requires: ${req.reason}` });
        continue;
      }
    }
    const entry = lock.workflows.find((w) => w.name === m.workflow);
    if (entry !== undefined) matched.push(entry);
  }
  return { event, repository: local.repository, sha, ref: event.ref, changedFiles: state.changedFiles, matched, unmatched };
}
