// The whole lock file: assembling workflow entries, the deterministic serialization (keys sorted
// recursively, workflows sorted by name, 2-space indent, trailing newline), the content hash
// over that serialization without `contentHash`, and reading a lock back with validation.
import { createHash } from 'node:crypto';
import { InputError, SvcError } from '../../core/errors.ts';
import {
  BREAKING_LOCK_VERSIONS,
  Lock,
  LOCK_SCHEMA_VERSION,
  ORG_WIDE_APPROVAL_LOCK_VERSION,
  RETRY_LOCK_VERSION,
  type LockWorkflow,
} from '../../schemas/lock.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';
import { canonicalStringify } from './canonical-json.ts';
import { CompileErrorCode } from '../compile/compile-scope.ts';
import { declaresApproval, isOrganizationWide } from '../compile/lock-entry.ts';

/** The lock's file name inside `.svc/`. */
export const LOCK_FILE_NAME = 'svc.lock.json';

const lockCheck = compileSchema(Lock);

export interface BuildLockOptions {
  /** What was compiled, e.g. `.svc/workflows/*.ts#default`. */
  readonly source: string;
  readonly workflows: readonly LockWorkflow[];
  readonly lockfileHash?: string;
  readonly siblingsDigest?: string;
}

function byName(a: LockWorkflow, b: LockWorkflow): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The newest breaking lock version that applies: 42 only when an organization-wide workflow
 * declares approval (an older orchestrator would skip the hold), 43 only when a job declares a
 * retry policy (an older orchestrator would not retry), else the previous one.
 */
export function minReaderVersionFor(workflows: readonly LockWorkflow[]): number {
  const needsOrgApproval = workflows.some((w) => isOrganizationWide(w) && declaresApproval(w));
  const needsRetry = workflows.some((w) => w.jobs.some((j) => j.retry !== undefined));
  const applicable = BREAKING_LOCK_VERSIONS.filter(
    (v) => (v !== ORG_WIDE_APPROVAL_LOCK_VERSION || needsOrgApproval) && (v !== RETRY_LOCK_VERSION || needsRetry),
  );
  return Math.max(...applicable);
}

/** Deterministic text of a lock (or of any lock-shaped value). */
export function serializeLock(lock: Lock | Omit<Lock, 'contentHash'>): string {
  const workflows = Array.isArray(lock.workflows) ? [...lock.workflows].sort(byName) : lock.workflows;
  return `${canonicalStringify({ ...lock, workflows }, 2)}\n`;
}

/** SHA-256 hex of the serialized lock without its `contentHash` field. */
export function computeLockContentHash(lock: Lock | Omit<Lock, 'contentHash'>): string {
  const { contentHash: _ignored, ...rest } = lock as Lock;
  return createHash('sha256').update(serializeLock(rest), 'utf8').digest('hex');
}

/** Workflow entries → a complete lock with versions and content hash. */
export function buildLock(options: BuildLockOptions): Lock {
  const seen = new Map<string, string>();
  for (const workflow of options.workflows) {
    const other = seen.get(workflow.name);
    if (other !== undefined) {
      throw new InputError(
        CompileErrorCode.duplicateWorkflow,
        `workflow name ${JSON.stringify(workflow.name)} is declared by both ${other} and ${workflow.source}: names must be unique`,
        { details: { workflow: workflow.name, sources: [other, workflow.source] } },
      );
    }
    seen.set(workflow.name, workflow.source);
  }
  const body: Omit<Lock, 'contentHash'> = {
    schemaVersion: LOCK_SCHEMA_VERSION,
    minReaderVersion: minReaderVersionFor(options.workflows),
    source: options.source,
    workflows: [...options.workflows].sort(byName),
  };
  if (options.lockfileHash !== undefined) body.lockfileHash = options.lockfileHash;
  if (options.siblingsDigest !== undefined) body.siblingsDigest = options.siblingsDigest;
  const lock: Lock = { ...body, contentHash: computeLockContentHash(body) };
  const result = lockCheck.validate(lock);
  if (!result.ok) {
    // Entries come from workflowToLockEntry, so a mismatch here is a compiler bug or bad options.
    throw new SvcError('SVC_ERR_COMPILE_LOCK_INVALID', `the assembled lock does not match its schema: ${formatIssues(result.issues)}`);
  }
  return lock;
}

/** Reads lock text: JSON, schema and content hash all checked. */
export function parseLock(text: string): Lock {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InputError('SVC_ERR_LOCK_INVALID', 'lock file is not valid JSON: recompile with `svc compile`', { cause: error });
  }
  const result = lockCheck.validate(value);
  if (!result.ok) {
    throw new InputError('SVC_ERR_LOCK_INVALID', `lock file does not match the lock schema: ${formatIssues(result.issues)}`, {
      details: { issues: result.issues },
    });
  }
  const expected = computeLockContentHash(result.value);
  if (expected !== result.value.contentHash) {
    throw new InputError('SVC_ERR_LOCK_HASH_MISMATCH', 'lock file contentHash does not match its content: it was edited by hand; recompile with `svc compile`');
  }
  return result.value;
}
