// The secrets a job gets at dispatch (`jobConfig.secrets`): every context the workflow entry
// and the job entry declare is checked against the run; all pass → their secrets, flattened.
// One refusal → SecretContextDeniedError, which dispatch turns into a failed job at once (no
// retry, nothing sent to the agent).
import type { Logger } from 'pino';
import type { MasterKeys } from '../../services/crypto/master-keys.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { NotAllowedError } from '../../../core/errors.ts';
import { checkContextRules, type RunFacts } from './rules.ts';
import { ContextRow, contextOf, openContextSecrets } from './store.ts';

/** A context the job declares refused it (or does not exist): the job fails with this message. */
export class SecretContextDeniedError extends NotAllowedError {
  /** Dispatch fails the job at once instead of retrying: the same run gets the same answer. */
  readonly permanent = true;
}

export interface JobSecretsInput {
  orgId: string;
  repository: string;
  ref: string | null;
  trustTier: string;
  isTestRun: boolean;
  /** Job kind (`build` jobs never get secrets). */
  kind: string;
  /** The run's frozen workflow lock entry. */
  lockEntry: unknown;
  /** The job's lock entry (undefined for pseudo-jobs). */
  lockJob: Record<string, unknown> | undefined;
  jobId: string;
  /** `svc run remote`: the fixture's `secrets:` mapping, local context name → orchestrator context. */
  contextMap?: Record<string, string>;
}

function names(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** Workflow contexts first, then the job's own, each once. */
export function declaredContexts(lockEntry: unknown, lockJob: Record<string, unknown> | undefined): string[] {
  const workflow = names((lockEntry as { contexts?: unknown } | null)?.contexts);
  return [...new Set([...workflow, ...names(lockJob?.['contexts'])])];
}

/**
 * `<context>:<KEY>` for every released secret, plus the bare `KEY` when exactly one released
 * context has it (a key two contexts share is reachable only qualified: ctx.secrets.get says so).
 */
export function flattenSecrets(byContext: Record<string, Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  const holders = new Map<string, number>();
  for (const [context, secrets] of Object.entries(byContext)) {
    for (const [key, value] of Object.entries(secrets)) {
      out[`${context}:${key}`] = value;
      holders.set(key, (holders.get(key) ?? 0) + 1);
    }
  }
  for (const secrets of Object.values(byContext)) {
    for (const [key, value] of Object.entries(secrets)) if (holders.get(key) === 1) out[key] = value;
  }
  return out;
}

async function reviewerApproved(pool: DatabasePool, jobId: string, context: string): Promise<boolean> {
  const row = await pool.maybeOne(sql.unsafe`
    SELECT 1 FROM approval_holds WHERE job_id = ${jobId} AND level = 'context' AND context = ${context} AND status = 'approved'`);
  return row !== null;
}

/** Undefined when the job declares no context (nothing to add to jobConfig). */
export async function releaseJobSecrets(pool: DatabasePool, masterKeys: MasterKeys | undefined, input: JobSecretsInput, logger: Logger): Promise<Record<string, string> | undefined> {
  if (input.kind === 'build') return undefined;
  // A remote test run's fixture maps local context names to orchestrator contexts.
  const declared = [...new Set(declaredContexts(input.lockEntry, input.lockJob).map((name) => input.contextMap?.[name] ?? name))];
  if (declared.length === 0) return undefined;
  const rows = await pool.any(sqlTyped(ContextRow)`
    SELECT name, branches, repositories, orgs, min_trust, allow_local_execution, required_reviewers, wait_timer_seconds, concurrency_limit, created_at, updated_at
    FROM secret_contexts WHERE name = ANY(${sql.array(declared, 'text')})`);
  const byName = new Map(rows.map((r) => [r.name, contextOf(r)]));
  const run: RunFacts = { orgId: input.orgId, repository: input.repository, ref: input.ref, trustTier: input.trustTier, isTestRun: input.isTestRun };
  const released: string[] = [];
  for (const name of declared) {
    const context = byName.get(name);
    if (context === undefined) {
      throw new SecretContextDeniedError('SVC_ERR_SECRETS_DENIED', `secret context "${name}" does not exist (declared by the job or its workflow); nothing was released`, { details: { context: name, rule: 'exists' } });
    }
    const verdict = checkContextRules(context, run);
    if (verdict.ok && context.requiredReviewers.length > 0 && !(await reviewerApproved(pool, input.jobId, name))) {
      // The run-control gates hold the job until a reviewer approves; a job here without that
      // approval reached dispatch some other way, and gets nothing.
      throw new SecretContextDeniedError('SVC_ERR_SECRETS_DENIED', `secret context "${name}" refused by rule requiredReviewers: no required reviewer (${context.requiredReviewers.join(', ')}) approved this job; nothing was released`, { details: { context: name, rule: 'requiredReviewers' } });
    }
    if (verdict.ok) {
      released.push(name);
      continue;
    }
    if (verdict.rule === 'allowLocalExecution') {
      // Spec: a test run's own bound context that is not a test context is skipped with a warning.
      logger.warn({ jobId: input.jobId, context: name }, 'test run: secret context without allowLocalExecution skipped');
      continue;
    }
    throw new SecretContextDeniedError('SVC_ERR_SECRETS_DENIED', `${verdict.reason}; nothing was released`, { details: { context: name, rule: verdict.rule } });
  }
  if (released.length === 0) return {};
  if (masterKeys === undefined || masterKeys.all.length === 0) {
    throw new SecretContextDeniedError('SVC_ERR_SECRETS_DENIED', 'secret contexts are declared but this orchestrator has no master key to open them', { details: { rule: 'masterKey' } });
  }
  return flattenSecrets(await openContextSecrets(pool, masterKeys.all, released));
}

