// `svc run <event> --local --job <name>`: run only the named jobs and every job they need
// (transitively), so a dependent still reads its needs' outputs. A name no matched workflow has is
// a usage error naming the jobs there are, so a typo never runs nothing and reports green.
import type { LockWorkflow } from '../../schemas/lock.ts';
import { InputError } from '../../core/errors.ts';
import { USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';

/** The workflow with only `names` and their needs; the workflow itself when `names` is empty. */
export function selectJobs(workflow: LockWorkflow, names: readonly string[]): LockWorkflow {
  if (names.length === 0) return workflow;
  const byName = new Map(workflow.jobs.map((j) => [j.name, j]));
  const keep = new Set<string>();
  const visit = (name: string): void => {
    if (keep.has(name)) return;
    keep.add(name);
    for (const need of byName.get(name)?.needs ?? []) visit(need);
  };
  for (const name of names) if (byName.has(name)) visit(name);
  return { ...workflow, jobs: workflow.jobs.filter((j) => keep.has(j.name)) };
}

/** Every `--job` must name a job of some matched workflow. */
export function checkJobNames(workflows: readonly LockWorkflow[], names: readonly string[]): void {
  const known = new Set(workflows.flatMap((w) => w.jobs.map((j) => j.name)));
  const unknown = names.filter((n) => !known.has(n));
  if (unknown.length > 0) {
    throw new InputError(USAGE_ERROR_CODE, `--job ${unknown.map((n) => JSON.stringify(n)).join(', ')}: no matched workflow has such a job (jobs: ${[...known].sort().join(', ') || 'none'})`);
  }
}
