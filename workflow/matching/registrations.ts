// The orchestrator's registrations (spec, Delivery guarantees 6): triggers of default-branch
// workflows that fire for events outside their own repository's pushes and pull requests.
// Indexed by org and event name for webhook and custom-event triggers, by org and trigger type
// for internal events and for organization-wide (global) workflows; orgs never share an entry.
// Matching a candidate is the same trigger evaluation as matchLock, with the registration's
// repository as the workflow repository.
import type { NormalizedEvent } from '../../schemas/event.ts';
import { LockTriggerMembers, type LockTrigger, type LockTriggerType } from '../../schemas/lock.ts';
import { compileMessageUnion, formatIssues } from '../../schemas/validate.ts';
import { InputError } from '../../core/errors.ts';
import type { MessageRegex } from './patterns.ts';
import { compileTrigger, evaluateTrigger, messageRegexesOf, webhookEventName, type CompiledTrigger } from './trigger.ts';
import type { FilterVerdict, MatchOptions } from './types.ts';

export interface Registration {
  readonly id: string;
  readonly orgId: string;
  /** `owner/repo` of the repository whose lock declares the workflow. */
  readonly repository: string;
  readonly workflow: string;
  readonly trigger: LockTrigger;
  /** Index of the trigger in the workflow's `triggers` (verdicts name it). Default 0. */
  readonly triggerIndex?: number;
}

export interface RegistrationIndex<R extends Registration = Registration> {
  readonly size: number;
  /** Registrations that may match the event, before their filters are evaluated. */
  candidatesFor(event: NormalizedEvent, orgId: string): R[];
  /** The compiled trigger of an indexed registration. */
  compiled(registration: R): CompiledTrigger | undefined;
}

export interface RegistrationMatch<R extends Registration = Registration> {
  readonly registration: R;
  readonly orgWide: boolean;
  readonly verdicts: FilterVerdict[];
}

export interface RegistrationNonMatch<R extends Registration = Registration> {
  readonly registration: R;
  readonly verdict: 'no_match' | 'indeterminate';
  readonly reasons: FilterVerdict[];
}

/** Triggers fed by the orchestrator itself, indexed by org and type. */
const INTERNAL_BY_TYPE: ReadonlySet<LockTriggerType> = new Set(['workflow_complete', 'job_complete', 'lifecycle', 'workflows_failed_batch']);

const triggerCheck = compileMessageUnion(LockTriggerMembers);

const key = (...parts: string[]) => parts.join('\u0000');

function invalid(index: number, message: string): InputError {
  return new InputError('SVC_ERR_MATCHING_INVALID_REGISTRATION', `registration ${index}: ${message}`, { details: { index } });
}

/**
 * Build the index. Provider-event triggers without repository patterns and schedules are not
 * indexed: the first are matched from their own repository's lock, the second fire through the
 * scheduler. Bad registrations are refused as a whole (InputError naming the entry), so a
 * half-built index is never used.
 */
export function buildRegistrationIndex<R extends Registration>(registrations: readonly R[]): RegistrationIndex<R> {
  const buckets = new Map<string, R[]>();
  const compiled = new Map<R, CompiledTrigger>();
  const ids = new Set<string>();
  const put = (k: string, r: R) => {
    const bucket = buckets.get(k);
    if (bucket) bucket.push(r);
    else buckets.set(k, [r]);
  };
  registrations.forEach((r, i) => {
    for (const field of ['id', 'orgId', 'repository', 'workflow'] as const) {
      if (typeof r[field] !== 'string' || r[field] === '') throw invalid(i, `${field} must be a non-empty string`);
    }
    if (!r.repository.includes('/')) throw invalid(i, `repository ${JSON.stringify(r.repository)} must be owner/repo`);
    if (ids.has(r.id)) throw invalid(i, `duplicate registration id ${JSON.stringify(r.id)}`);
    ids.add(r.id);
    const triggerIndex = r.triggerIndex ?? 0;
    if (!Number.isInteger(triggerIndex) || triggerIndex < 0) throw invalid(i, 'triggerIndex must be a non-negative integer');
    const checked = triggerCheck.validate(r.trigger);
    if (!checked.ok) throw invalid(i, `trigger is not a lock trigger: ${formatIssues(checked.issues)}`);
    compiled.set(r, compileTrigger(r.trigger, triggerIndex));
    const t = r.trigger;
    if (t.type === 'webhook') for (const name of t.events) put(key('webhook', r.orgId, name), r);
    else if (t.type === 'event') put(key('event', r.orgId, t.name), r);
    else if (INTERNAL_BY_TYPE.has(t.type)) put(key('type', r.orgId, t.type), r);
    else if ('repositories' in t && t.repositories.length > 0) put(key('global', r.orgId, t.type), r);
  });
  return {
    size: compiled.size,
    compiled: (registration) => compiled.get(registration),
    candidatesFor(event, orgId) {
      const type = event.type;
      if (type === null) return [];
      if (type === 'webhook') return [...(buckets.get(key('webhook', orgId, webhookEventName(event))) ?? [])];
      if (type === 'event') return event.customEventName === null ? [] : [...(buckets.get(key('event', orgId, event.customEventName)) ?? [])];
      if (INTERNAL_BY_TYPE.has(type)) return [...(buckets.get(key('type', orgId, type)) ?? [])];
      // A global workflow of the event's own repository is matched from that repository's lock.
      const source = event.repository?.fullName.toLowerCase() ?? null;
      return (buckets.get(key('global', orgId, type)) ?? []).filter((r) => r.repository.toLowerCase() !== source);
    },
  };
}

/** The regular-expression commit-message filters of the event's candidate registrations (for `regexResults`). */
export function registrationMessageRegexes<R extends Registration>(index: RegistrationIndex<R>, event: NormalizedEvent, orgId: string): MessageRegex[] {
  return messageRegexesOf(index.candidatesFor(event, orgId).map((r) => index.compiled(r)!), event);
}

/**
 * Evaluate every candidate registration of the event's org. Options are those of matchLock;
 * `lockRepository` is each registration's own repository.
 */
export function matchRegistrations<R extends Registration>(
  index: RegistrationIndex<R>,
  event: NormalizedEvent,
  orgId: string,
  options: Omit<MatchOptions, 'lockRepository'> = {},
): { matched: RegistrationMatch<R>[]; unmatched: RegistrationNonMatch<R>[] } {
  const matched: RegistrationMatch<R>[] = [];
  const unmatched: RegistrationNonMatch<R>[] = [];
  for (const registration of index.candidatesFor(event, orgId)) {
    const trigger = index.compiled(registration)!;
    const verdicts: FilterVerdict[] = [];
    const result = evaluateTrigger(trigger, registration.workflow, event, { ...options, lockRepository: registration.repository }, verdicts);
    if (result.verdict === 'pass') matched.push({ registration, orgWide: result.orgWide, verdicts });
    else unmatched.push({ registration, verdict: result.verdict === 'fail' ? 'no_match' : 'indeterminate', reasons: verdicts });
  }
  return { matched, unmatched };
}
