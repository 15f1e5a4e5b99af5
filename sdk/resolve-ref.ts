// Resolves a lock's dynamic reference (`rules[0]`, `jobs.build.rules[1]`, `jobs["a-b"].matrix`,
// `jobs.deploy.generate`, `jobs[0].steps[2].rules[0]`) to the closure in the loaded workflow.
// The agent uses it; the compiler writes these references.
import { NotFoundError } from '../core/errors.ts';
import type { Job } from './job.ts';
import type { Workflow } from './workflow.ts';

type Segment = string | number;

function parseRef(ref: string): Segment[] {
  const out: Segment[] = [];
  const re = /(?:^|\.)([A-Za-z_$][A-Za-z0-9_$]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y;
  let index = 0;
  while (index < ref.length) {
    re.lastIndex = index;
    const m = re.exec(ref);
    if (m === null) throw new NotFoundError('SVC_ERR_LOCK_REF_INVALID', `dynamic reference ${JSON.stringify(ref)} is malformed`);
    out.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : (JSON.parse(m[3]!) as string)));
    index = re.lastIndex;
  }
  return out;
}

function jobByKey(workflow: Workflow, key: Segment): Job | undefined {
  const jobs = workflow.options.jobs;
  if (Array.isArray(jobs)) return typeof key === 'number' ? jobs[key] : jobs.find((j) => j.options.name === key);
  return typeof key === 'string' && Object.hasOwn(jobs, key) ? (jobs as Record<string, Job>)[key] : undefined;
}

export function resolveDefinitionRef(workflow: Workflow, ref: string): unknown {
  const path = parseRef(ref);
  const missing = (): never => {
    throw new NotFoundError('SVC_ERR_LOCK_REF_UNRESOLVED', `dynamic reference ${JSON.stringify(ref)} does not exist in workflow ${JSON.stringify(workflow.name)}: the lock is stale; recompile with \`svc compile\``);
  };
  let [head, ...rest] = path;
  let owner: { options: object } = workflow;
  if (head === 'jobs') {
    const job = jobByKey(workflow, rest[0] ?? missing());
    if (job === undefined) return missing();
    owner = job;
    rest = rest.slice(1);
    if (rest[0] === 'steps') {
      const step = typeof rest[1] === 'number' ? job.steps[rest[1]] : undefined;
      if (step === undefined) return missing();
      owner = step;
      rest = rest.slice(2);
    }
    head = rest[0];
    rest = rest.slice(1);
  }
  if (typeof head !== 'string') return missing();
  let value: unknown = (owner.options as Record<string, unknown>)[head];
  for (const segment of rest) {
    if (typeof value !== 'object' || value === null) return missing();
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value === undefined ? missing() : value;
}
