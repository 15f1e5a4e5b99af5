// Turning what a generator job reported into job rows of its run (spec "Dispatch and run
// errors": a generated job whose contexts or config cannot be resolved fails on the run; jobs
// needing it are skipped and the run fails).
//
// Whole-output problems (no report, bad or duplicate names, a name already used in the run, a
// bad matrix) fail the generator job itself: nothing is inserted and everything needing the
// dynamic entry is skipped. A problem with one generated job inserts that job as `failed` with
// the reason, so only what needs it is skipped; the other generated jobs run.
import { emitJobComplete } from '../events/completion.ts';
import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import { LockJob, type LockWorkflow } from '../../../schemas/lock.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import type { GeneratedJobs } from '../../../schemas/wire/runner.ts';
import { sql } from '../../services/db/index.ts';
import { BUILD_JOB_NAME, expandMatrix } from '../runs/create.ts';
import { generatorEntryOf, isInternalJobName, JOB_NAME_PATTERN } from './names.ts';
import { generatorOf } from './plan.ts';
import { defaultJobGroup, isGated } from '../run-control/gates-plan.ts';

const checkLockJob = compileSchema(LockJob);
const MATRIX_AXIS = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
export const MAX_GENERATED_INSTANCES = 256;

type MatrixValue = string | number | boolean;
type Axes = Record<string, MatrixValue[]>;

export interface GeneratorJobRef {
  id: string;
  runId: string;
  orgId: string;
  /** `svc:generate:<entry>`. */
  name: string;
}

/** `failure` set: the generator job fails with it and nothing was inserted. */
export interface GeneratedOutcome {
  failure?: string;
  inserted: number;
  /** Generated jobs inserted as failed, with why. */
  rejected: Array<{ name: string; reason: string }>;
}

/** A dynamic matrix's axes, checked as the compiler checks a static one; a string says what is wrong. */
export function checkAxes(value: unknown): Axes | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the matrix generator must return a record of axis name → array of values';
  const axes: Axes = {};
  let size = 1;
  for (const [axis, values] of Object.entries(value)) {
    if (!MATRIX_AXIS.test(axis)) return `matrix axis ${JSON.stringify(axis)} is not a valid axis name`;
    if (!Array.isArray(values) || values.length === 0) return `matrix axis ${axis} must be a non-empty array`;
    const seen = new Set<string>();
    for (const v of values as unknown[]) {
      const ok = typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
      if (!ok) return `matrix axis ${axis} has ${JSON.stringify(v) ?? String(v)}: values must be strings, finite numbers or booleans`;
      const key = `${typeof v}:${String(v)}`;
      if (seen.has(key)) return `matrix axis ${axis} repeats ${JSON.stringify(v)}`;
      seen.add(key);
    }
    axes[axis] = [...(values as MatrixValue[])];
    size *= values.length;
  }
  if (Object.keys(axes).length === 0) return 'the matrix generator returned no axes';
  if (size > MAX_GENERATED_INSTANCES) return `the matrix expands to ${size} jobs; the limit is ${MAX_GENERATED_INSTANCES}`;
  return axes;
}

function displayName(name: string, matrix: Record<string, MatrixValue> | null): string {
  return matrix === null ? name : `${name} (${Object.values(matrix).join(', ')})`;
}

async function insertJob(
  tx: CommonQueryMethods,
  job: GeneratorJobRef,
  row: { name: string; matrix: Record<string, MatrixValue> | null; needs: string[]; runsOn: string[]; status: 'waiting' | 'failed'; reason: string | null; generatedBy: string | null; definition: LockJob | null },
  run: { workflow: LockWorkflow; workflowRepository: string; entry?: LockJob },
): Promise<string> {
  const id = randomUUID();
  // Run-control gates apply to generated jobs as to lock jobs (docs/run-control.md).
  const def = row.definition ?? run.entry ?? null;
  const gated = row.status === 'waiting' && def !== null && isGated(run.workflow, def);
  const group = def?.concurrency === undefined ? null : defaultJobGroup(run.workflowRepository, run.workflow.name, row.name);
  await tx.query(sql.unsafe`
    INSERT INTO jobs (id, run_id, org_id, name, display_name, kind, matrix, needs, runs_on, status, reason, generated_by, definition, finished_at, gated, concurrency_group)
    VALUES (${id}, ${job.runId}, ${job.orgId}, ${row.name}, ${displayName(row.name, row.matrix)}, 'job',
            ${row.matrix === null ? null : sql.jsonb(row.matrix)}, ${sql.array(row.needs, 'text')}, ${sql.array(row.runsOn, 'text')},
            ${row.status}, ${row.reason}, ${row.generatedBy}, ${row.definition === null ? null : sql.jsonb(row.definition as never)},
            ${row.status === 'failed' ? sql.fragment`now()` : null}, ${gated}, ${group})`);
  if (row.status === 'failed') {
    await tx.query(sql.unsafe`
      INSERT INTO run_events (run_id, job_id, kind, status, payload)
      VALUES (${job.runId}, ${id}, 'job_complete', 'failed', ${sql.jsonb({ reason: row.reason, generatedBy: row.generatedBy })})
      ON CONFLICT DO NOTHING`);
    await emitJobComplete(tx, job.runId, id, 'failed');
  }
  return id;
}

/** Names of the generated jobs that sit on a `needs` cycle among themselves. */
function cycleMembers(entries: ReadonlyMap<string, LockJob>): Map<string, string> {
  const out = new Map<string, string>();
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (name: string): void => {
    state.set(name, 'visiting');
    stack.push(name);
    for (const need of entries.get(name)?.needs ?? []) {
      if (!entries.has(need)) continue;
      const s = state.get(need);
      if (s === 'visiting') {
        const cycle = [...stack.slice(stack.indexOf(need)), need];
        for (const member of cycle) out.set(member, `needs form a cycle: ${cycle.join(' → ')}`);
      } else if (s === undefined) visit(need);
    }
    stack.pop();
    state.set(name, 'done');
  };
  for (const name of [...entries.keys()].sort()) if (!state.has(name)) visit(name);
  return out;
}

/**
 * Inserts what the generator job `job` produced into its run. Call inside the transaction that
 * records the generator's completion (the run is locked), before progressing the run.
 */
export async function insertGenerated(tx: CommonQueryMethods, job: GeneratorJobRef, generated: GeneratedJobs | undefined): Promise<GeneratedOutcome> {
  const outcome: GeneratedOutcome = { inserted: 0, rejected: [] };
  const entryName = generatorEntryOf(job.name);
  const run = (await tx.one(sql.unsafe`SELECT lock_entry, workflow_repository FROM runs WHERE id = ${job.runId}`)) as { lock_entry: LockWorkflow; workflow_repository: string };
  const workflow = run.lock_entry;
  const where = { workflow, workflowRepository: run.workflow_repository };
  const entry = entryName === undefined ? undefined : workflow.jobs.find((j) => j.name === entryName);
  const spec = entry === undefined ? undefined : generatorOf(entry);
  if (entry === undefined || spec === undefined || entryName === undefined) return { ...outcome, failure: `the run's lock has no dynamic job ${JSON.stringify(entryName ?? job.name)}` };
  const rows = (await tx.any(sql.unsafe`SELECT name FROM jobs WHERE run_id = ${job.runId}`)) as readonly { name: string }[];
  const ownsBuild = rows.some((r) => r.name === BUILD_JOB_NAME);
  const withBuild = (needs: readonly string[]) => (ownsBuild ? [...needs, BUILD_JOB_NAME] : [...needs]);

  if (spec.kind === 'matrix') {
    const axes = checkAxes(generated?.matrix);
    if (typeof axes === 'string') return { ...outcome, failure: `dynamic matrix of ${entryName}: ${axes}` };
    for (const matrix of expandMatrix(axes)) {
      await insertJob(tx, job, { name: entryName, matrix, needs: withBuild(entry.needs), runsOn: [...entry.runsOn], status: 'waiting', reason: null, generatedBy: null, definition: null }, { ...where, entry });
      outcome.inserted += 1;
    }
    return outcome;
  }

  const list = generated?.jobs;
  if (!Array.isArray(list)) return { ...outcome, failure: `generator ${entryName} reported no generated jobs` };
  // Names already taken in the run: its rows and every lock entry (dynamic ones included).
  const taken = new Map<string, string>();
  for (const name of [...rows.map((r) => r.name), ...workflow.jobs.map((j) => j.name)]) if (!isInternalJobName(name)) taken.set(name.toLowerCase(), name);
  const mine = new Map<string, string>();
  for (const item of list) {
    if (!JOB_NAME_PATTERN.test(item.name)) return { ...outcome, failure: `generator ${entryName} produced a job named ${JSON.stringify(item.name)}, which is not a valid job name (letters, digits, _ . -; at most 100)` };
    const folded = item.name.toLowerCase();
    const clash = taken.get(folded) ?? mine.get(folded);
    if (clash !== undefined) return { ...outcome, failure: `generator ${entryName} produced job ${JSON.stringify(item.name)}, but ${JSON.stringify(clash)} is already a job of this run (job names are compared ignoring case)` };
    mine.set(folded, item.name);
  }
  const known = new Set([...taken.values(), ...mine.values()]);
  const declared = new Set([...(workflow.contexts ?? []), ...workflow.jobs.flatMap((j) => j.contexts)]);

  const valid = new Map<string, LockJob>();
  const errors = new Map<string, string>();
  for (const item of list) {
    const error = item.error ?? checkGenerated(item.name, item.entry, { entryName, known, declared });
    if (error !== undefined) errors.set(item.name, error);
    else valid.set(item.name, item.entry as LockJob);
  }
  for (const [name, why] of cycleMembers(valid)) {
    valid.delete(name);
    errors.set(name, why);
  }
  for (const item of list) {
    const why = errors.get(item.name);
    if (why !== undefined) {
      const reason = `generated job ${JSON.stringify(item.name)} (from ${entryName}) cannot run: ${why}`;
      await insertJob(tx, job, { name: item.name, matrix: null, needs: [], runsOn: [], status: 'failed', reason, generatedBy: entryName, definition: null }, where);
      outcome.rejected.push({ name: item.name, reason });
      continue;
    }
    const def = valid.get(item.name)!;
    const combos = def.matrix?.type === 'static' ? expandMatrix(def.matrix.axes) : [null];
    for (const matrix of combos) {
      await insertJob(tx, job, { name: item.name, matrix, needs: withBuild(def.needs), runsOn: [...def.runsOn], status: 'waiting', reason: null, generatedBy: entryName, definition: def }, where);
      outcome.inserted += 1;
    }
  }
  return outcome;
}

/** Why one generated entry cannot run, or undefined when it can. */
export function checkGenerated(name: string, value: unknown, ctx: { entryName: string; known: ReadonlySet<string>; declared: ReadonlySet<string> }): string | undefined {
  const checked = checkLockJob.validate(value);
  if (!checked.ok) return `its definition is not a valid lock job entry: ${formatIssues(checked.issues)}`;
  const def = checked.value;
  if (def.name !== name) return `its definition is named ${JSON.stringify(def.name)}`;
  if (def.dynamic === true) return 'a generated job cannot generate jobs itself';
  if (def.matrix?.type === 'dynamic') return 'a generated job cannot have a dynamic matrix';
  if (def.concurrency?.hasGroup === true) return 'a generated job cannot compute its concurrency group key (drop `group`: it then shares the default group of its name)';
  if (def.matrix?.type === 'static') {
    const axes = checkAxes(def.matrix.axes);
    if (typeof axes === 'string') return axes;
  }
  for (const need of def.needs) {
    if (need === ctx.entryName) return `it needs ${JSON.stringify(need)}, its own generator`;
    if (!ctx.known.has(need)) return `it needs ${JSON.stringify(need)}, which is not a job of this run`;
  }
  for (const context of def.contexts) {
    if (!ctx.declared.has(context)) return `it uses secret context ${JSON.stringify(context)}, which the workflow does not declare (a generated job may use only contexts the workflow or its lock jobs declare)`;
  }
  return undefined;
}
