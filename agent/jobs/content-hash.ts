// The workflow content-hash check (spec core behaviour 3): the tree the job is about to run must
// hash to the `contentHash` the orchestrator matched the event with. A mismatch means the
// workflow sources changed without `svc compile`; the job fails at init, before any step.
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { Type } from 'typebox';
import { hashWorkflowTree } from '../../workflow/hash/index.ts';
import { messageOf } from '../../core/errors.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';
import { JobFailure } from './failure.ts';

// Only what the agent needs from the lock; the orchestrator validated the whole file.
const LockView = Type.Object({
  workflows: Type.Array(
    Type.Object({
      name: Type.String(),
      source: Type.String({ pattern: '^[^#]+#[A-Za-z_$][A-Za-z0-9_$]*$' }),
      hashFiles: Type.Optional(Type.Array(Type.String())),
    }),
  ),
});
const checkLockView = compileSchema(LockView);

export interface WorkflowLocation {
  /** Absolute path of the workflow module inside the tree. */
  file: string;
  exportName: string;
  hashFiles: string[];
}

export async function locateWorkflow(srcDir: string, workflowName: string): Promise<WorkflowLocation> {
  const lockPath = join(srcDir, '.svc', 'svc.lock.json');
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(lockPath, 'utf8'));
  } catch (error) {
    throw new JobFailure('SVC_ERR_AGENT_LOCK_UNREADABLE', `the job's tree has no readable .svc/svc.lock.json: ${messageOf(error)}; run \`svc compile\` and push again`);
  }
  const checked = checkLockView.validate(raw);
  if (!checked.ok) throw new JobFailure('SVC_ERR_AGENT_LOCK_UNREADABLE', `.svc/svc.lock.json in the job's tree is not a lock file: ${formatIssues(checked.issues)}`);
  const entry = checked.value.workflows.find((w) => w.name === workflowName);
  if (entry === undefined) {
    throw new JobFailure('SVC_ERR_AGENT_LOCK_NO_WORKFLOW', `Lock file is out of date: .svc/svc.lock.json in the job's tree has no workflow named ${JSON.stringify(workflowName)}; run \`svc compile\` and push again`);
  }
  const hash = entry.source.lastIndexOf('#');
  const file = resolve(srcDir, entry.source.slice(0, hash));
  const rel = relative(srcDir, file);
  if (rel.startsWith('..') || isAbsolute(rel)) throw new JobFailure('SVC_ERR_AGENT_LOCK_SOURCE', `the workflow source ${JSON.stringify(entry.source)} points outside the repository`);
  return { file, exportName: entry.source.slice(hash + 1), hashFiles: entry.hashFiles ?? [] };
}

export interface ContentHashCheck {
  computed: string;
  symlinks: string[];
}

/** Hash the tree; throws the drift failure (text per the spec) when it differs from `expected`. */
export async function verifyContentHash(options: { srcDir: string; workflow: string; expected: string; hashFiles: readonly string[]; sdkVersion: string }): Promise<ContentHashCheck> {
  let result;
  try {
    result = await hashWorkflowTree({ repoRoot: options.srcDir, hashFiles: options.hashFiles });
  } catch (error) {
    throw new JobFailure('SVC_ERR_AGENT_CONTENT_HASH', `the workflow tree could not be hashed: ${messageOf(error)}`, { cause: error });
  }
  const expected = options.expected.trim().toLowerCase().replace(/^sha256:/, '');
  if (result.contentHash !== expected) {
    const links = result.symlinks.length > 0 ? ` The .svc tree contains symlinks, which are hashed as their targets: ${result.symlinks.map((s) => `.svc/${s}`).join(', ')}.` : '';
    throw new JobFailure(
      'SVC_ERR_AGENT_LOCK_OUT_OF_DATE',
      `Lock file is out of date: workflow ${JSON.stringify(options.workflow)} hashes to ${result.contentHash} but the lock file says ${expected}. ` +
        `Run \`svc compile\` and commit .svc/svc.lock.json. (agent SDK version ${options.sdkVersion}, bundle hash ${result.contentHash}).${links}`,
    );
  }
  return { computed: result.contentHash, symlinks: result.symlinks };
}
