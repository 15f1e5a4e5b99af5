// Concurrency group keys, evaluated by the `filter` pseudo-job once the filter and rules said
// "run" (docs/scheduling.md). The lock records only `hasGroup`: the orchestrator never runs
// workflow code, so the keys of the workflow's and each static job's `concurrency.group` are
// computed here and reported in `runner.result.concurrencyGroups`. A string is taken as is; a
// function is called with the RuleContext the filter gets, in its own activity with a time
// limit. A key is trimmed and must be 1..200 characters; anything else is a failure naming
// where (`concurrency group of the workflow: …`, `concurrency group of job <name>: …`).
import { messageOf } from '../../core/errors.ts';
import type { RuleContext } from '../../sdk/context.ts';
import { isJob, type Job } from '../../sdk/job.ts';
import type { Workflow } from '../../sdk/workflow.ts';
import type { ConcurrencyGroups } from '../../schemas/wire/runner.ts';
import { Activity, guard } from './activity.ts';

/** schemas/wire/runner.ts `GroupKey`'s maxLength. */
export const MAX_GROUP_KEY = 200;

/** One declared group: where it is declared (for messages and the report) and its value. */
export interface DeclaredGroup {
  /** `undefined` for the workflow's own group. */
  readonly job: string | undefined;
  readonly group: unknown;
}

export type GroupsOutcome =
  | { kind: 'ok'; groups: ConcurrencyGroups | undefined }
  | { kind: 'failed'; reason: string }
  | { kind: 'aborted' };

export interface GroupEvaluation {
  /** Activity label the group functions run under (their log lines go there). */
  readonly label: string;
  /** The context a group function is called with, bound to its activity. */
  context(activity: Activity): RuleContext;
  /** Time limit of one group function, in milliseconds. */
  readonly timeoutMs: number;
  /** Called with the activity of the running function (cancel aborts it), then undefined. */
  track(activity: Activity | undefined): void;
}

function groupOf(concurrency: unknown): unknown {
  if (typeof concurrency !== 'object' || concurrency === null) return undefined;
  return (concurrency as { group?: unknown }).group;
}

/** The declared groups, the workflow's first, then the static jobs' in definition order. */
export function declaredGroups(workflow: Workflow): DeclaredGroup[] {
  const out: DeclaredGroup[] = [];
  const own = groupOf(workflow.options.concurrency);
  if (own !== undefined) out.push({ job: undefined, group: own });
  const jobs = workflow.options.jobs;
  const entries: Array<[string, unknown]> = Array.isArray(jobs)
    ? (jobs as readonly Job[]).map((j) => [String(j?.options?.name), j])
    : Object.entries(jobs as Readonly<Record<string, Job>>);
  for (const [name, job] of entries) {
    if (!isJob(job) || job.dynamic) continue;
    const group = groupOf(job.options.concurrency);
    if (group !== undefined) out.push({ job: name, group });
  }
  return out;
}

export function groupLocation(job: string | undefined): string {
  return job === undefined ? 'concurrency group of the workflow' : `concurrency group of job ${job}`;
}

/** A group value → its key, or why it is not one. */
export function checkGroupKey(value: unknown, from: 'is' | 'returned'): { key: string } | { why: string } {
  if (typeof value !== 'string') return { why: `${from} ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}, expected a string` };
  const key = value.trim();
  if (key === '') return { why: `${from} an empty string` };
  if (key.length > MAX_GROUP_KEY) return { why: `${from} ${key.length} characters after trimming; the limit is ${MAX_GROUP_KEY}` };
  return { key };
}

async function evaluateOne(declared: DeclaredGroup, how: GroupEvaluation): Promise<{ key: string } | { why: string } | 'aborted'> {
  const { group } = declared;
  if (typeof group !== 'function') {
    if (typeof group === 'string') return checkGroupKey(group, 'is');
    return { why: `must be a string or a function, got ${group === null ? 'null' : typeof group}` };
  }
  const activity = new Activity(how.label);
  how.track(activity);
  const outcome = await guard(activity, () => (group as (ctx: RuleContext) => unknown)(how.context(activity)), how.timeoutMs);
  how.track(undefined);
  if (outcome.kind === 'ok') return checkGroupKey(outcome.value, 'returned');
  if (outcome.kind === 'aborted') return 'aborted';
  if (outcome.kind === 'timeout') return { why: `timed out after ${outcome.ms} ms` };
  return { why: `threw: ${messageOf(outcome.error)}` };
}

/**
 * Evaluates every declared group. Every group is tried so that one report names all bad keys;
 * a cancel stops at once.
 */
export async function evaluateConcurrencyGroups(workflow: Workflow, how: GroupEvaluation): Promise<GroupsOutcome> {
  const declared = declaredGroups(workflow);
  let own: string | undefined;
  const jobs: Record<string, string> = {};
  const failures: string[] = [];
  for (const d of declared) {
    const got = await evaluateOne(d, how);
    if (got === 'aborted') return { kind: 'aborted' };
    if ('why' in got) failures.push(`${groupLocation(d.job)}: ${got.why}`);
    else if (d.job === undefined) own = got.key;
    else jobs[d.job] = got.key;
  }
  if (failures.length > 0) return { kind: 'failed', reason: failures.join('; ') };
  if (declared.length === 0) return { kind: 'ok', groups: undefined };
  return {
    kind: 'ok',
    groups: { ...(own === undefined ? {} : { workflow: own }), ...(Object.keys(jobs).length === 0 ? {} : { jobs }) },
  };
}
