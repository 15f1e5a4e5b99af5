// Step 12: the event against its repository's lock, then against the org's registrations of
// organization-wide workflows (other repositories' triggers with repository patterns), under
// the two-axis allow policy. Every match becomes a candidate run with its own run id later.
// Commit-message regular expressions are run off the event loop first (message-regex.ts).
import picomatch from 'picomatch';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import type { Lock, LockRequirement, LockWorkflow } from '../../../../schemas/lock.ts';
import {
  buildRegistrationIndex,
  lockMessageRegexes,
  matchLock,
  matchRegistrations,
  registrationMessageRegexes,
  type EventDetails,
  type MatchOptions,
  type OrgWidePolicy,
} from '../../../../workflow/matching/index.ts';
import type { DatabasePool } from '../../../services/db/index.ts';
import { listSources, type SourceSummary } from '../../sources/store.ts';
import { messageRegexResults, type MessageRegexOptions } from './message-regex.ts';
import { candidateRegistrations, type RegistrationCache, type RegistrationRecord } from './registrations.ts';

export interface Candidate {
  workflow: LockWorkflow;
  requires: LockRequirement[];
  orgWide: boolean;
  workflowRepository: string;
  workflowSha: string;
  workflowRef: string | null;
  workflowSourceId: string;
  workflowCloneUrl: string | null;
  lockfileHash: string | null;
  registration?: RegistrationRecord;
}

export interface MatchSummary {
  candidates: Candidate[];
  /** Workflow → why it did not run (first failing verdict), for the delivery record. */
  unmatched: Array<{ workflow: string; verdict: string; reason: string }>;
  orgWideCount: number;
}

function patternMatcher(patterns: readonly string[]): (repository: string) => boolean {
  if (patterns.length === 0) return () => false;
  if (patterns.includes('*') || patterns.includes('**')) return () => true;
  const isMatch = picomatch([...patterns], { nocase: true });
  return (repository) => isMatch(repository);
}

/** Both axes from the org's sources: a workflow repository some source allows, an event repository its own source allows. */
export function orgWidePolicyOf(orgSources: readonly SourceSummary[], eventSource: SourceSummary | undefined): OrgWidePolicy {
  const workflowAllowed = patternMatcher(orgSources.flatMap((s) => s.orgWideWorkflowRepositories));
  const sourceAllowed = patternMatcher(eventSource?.orgWideSourceRepositories ?? []);
  return { workflowRepositoryAllowed: workflowAllowed, sourceRepositoryAllowed: sourceAllowed };
}

export interface MatchInput {
  pool: DatabasePool;
  orgId: string;
  event: NormalizedEvent;
  /** The event repository's lock (null for events without one, e.g. generic). */
  lock: Lock | null;
  lockSha: string | null;
  repository: string | null;
  sourceId: string;
  cloneUrl: string | null;
  eventSource?: SourceSummary;
  changedFiles?: string[] | null;
  changedFilesUnavailable?: string;
  details?: EventDetails;
  /** Cached reads (the pipeline's); the table otherwise. */
  registrations?: RegistrationCache;
  orgSources?: (orgId: string) => Promise<SourceSummary[]>;
  /** Where and how long commit-message regular expressions run (defaults: the shared guard, 100 ms). */
  regex?: MessageRegexOptions;
}

type SharedOptions = Omit<MatchOptions, 'lockRepository' | 'orgWidePolicy' | 'regexResults'>;

export async function matchEvent(input: MatchInput): Promise<MatchSummary> {
  const summary: MatchSummary = { candidates: [], unmatched: [], orgWideCount: 0 };
  const options: SharedOptions = {
    ...(input.changedFiles !== undefined ? { changedFiles: input.changedFiles } : {}),
    ...(input.changedFilesUnavailable !== undefined ? { changedFilesUnavailable: input.changedFilesUnavailable } : {}),
    ...(input.details !== undefined ? { details: input.details } : {}),
  };
  await matchOwnLock(input, options, summary);
  await matchOrgRegistrations(input, options, summary);
  return summary;
}

async function matchOwnLock(input: MatchInput, options: SharedOptions, summary: MatchSummary): Promise<void> {
  const { event, lock, repository, lockSha } = input;
  if (lock === null || repository === null || lockSha === null) return;
  const regexResults = await messageRegexResults(event, lockMessageRegexes(lock, event), input.regex);
  const result = matchLock(event, lock, { ...options, lockRepository: repository, regexResults });
  const byName = new Map(lock.workflows.map((w) => [w.name, w]));
  for (const m of result.matched) {
    // An organization-wide trigger of this repository matched its own event: plain match.
    summary.candidates.push({
      workflow: byName.get(m.workflow)!,
      requires: m.requires,
      orgWide: false,
      workflowRepository: repository,
      workflowSha: lockSha,
      workflowRef: event.ref,
      workflowSourceId: input.sourceId,
      workflowCloneUrl: input.cloneUrl,
      lockfileHash: lock.lockfileHash ?? null,
    });
  }
  for (const u of result.unmatched) {
    const reason = u.reasons.find((r) => r.verdict !== 'pass');
    summary.unmatched.push({ workflow: u.workflow, verdict: u.verdict, reason: reason?.detail ?? 'no trigger matched' });
  }
}

async function matchOrgRegistrations(input: MatchInput, options: SharedOptions, summary: MatchSummary): Promise<void> {
  const { event } = input;
  const registrations = input.registrations !== undefined ? await input.registrations.candidates(input.pool, input.orgId, event) : await candidateRegistrations(input.pool, input.orgId, event);
  if (registrations.length === 0) return;
  const orgSources = input.orgSources !== undefined ? await input.orgSources(input.orgId) : await listSources(input.pool, input.orgId);
  const policy = orgWidePolicyOf(orgSources, input.eventSource);
  const index = buildRegistrationIndex(registrations);
  const regexResults = await messageRegexResults(event, registrationMessageRegexes(index, event, input.orgId), input.regex);
  const result = matchRegistrations(index, event, input.orgId, { ...options, orgWidePolicy: policy, regexResults });
  const seen = new Set<string>();
  for (const m of result.matched) {
    const r = m.registration;
    // One run per workflow even when several of its triggers are registered.
    const key = `${r.repository.toLowerCase()}\0${r.workflow}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (m.orgWide) summary.orgWideCount += 1;
    summary.candidates.push({
      workflow: r.lockEntry,
      requires: 'requires' in r.trigger ? [...r.trigger.requires] : [],
      orgWide: m.orgWide,
      workflowRepository: r.repository,
      workflowSha: r.sha,
      workflowRef: `refs/heads/${r.branch}`,
      workflowSourceId: r.sourceId,
      workflowCloneUrl: r.cloneUrl,
      lockfileHash: r.lockfileHash,
      registration: r,
    });
  }
  for (const u of result.unmatched) {
    const reason = u.reasons.find((x) => x.verdict !== 'pass');
    summary.unmatched.push({ workflow: `${u.registration.repository}:${u.registration.workflow}`, verdict: u.verdict, reason: reason?.detail ?? 'no trigger matched' });
  }
}
