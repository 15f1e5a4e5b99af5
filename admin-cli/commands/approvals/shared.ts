// What the approvals commands share: the database flag and helpers of the other admin commands,
// the run id argument check, the text lines of a hold, and a decision as an operator (approve or
// reject straight on the database, `via: admin`, for an installation without a relay).
import { Args, Flags } from '@oclif/core';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { approvalLines, notCountedError } from '../../../core/cli/approval-outcome.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { decideRun, type DecideResult } from '../../../kernel/orchestrator/run-control/approvals.ts';
import { anyLoginResolver } from '../../../kernel/orchestrator/run-control/people.ts';
import { operatorActor, recordAudit } from '../../../kernel/orchestrator/audit/store.ts';
import { orgOfRun } from '../../../kernel/orchestrator/runs/approval-holds.ts';
import type { ApprovalHoldView } from '../../../schemas/http/approvals.ts';
import { MAX_APPROVAL_COMMENT_LENGTH } from '../../../schemas/wire/relay.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';

export { adminConfig, databaseFlag, databaseUrl, withDatabase };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A run id: a UUID, else a usage error (exit 2). */
export function checkRunId(value: string, what = 'run id'): string {
  if (!UUID.test(value)) throw new InputError(USAGE_ERROR_CODE, `"${value.slice(0, 80)}" is not a ${what} (a UUID, as "svc-admin runs list" prints it)`);
  return value.toLowerCase();
}

/** `workflow`, `job deploy`, `step deploy/migrate`, `context deploy (prod)`. */
export function holdSubject(h: Pick<ApprovalHoldView, 'level' | 'job' | 'context' | 'step'>): string {
  if (h.level === 'workflow') return 'workflow';
  if (h.level === 'step') return `step ${h.job ?? '?'}/${h.step ?? '?'}`;
  if (h.level === 'context') return `context ${h.job ?? '?'} (${h.context ?? '?'})`;
  return `job ${h.job ?? '?'}`;
}

/** The lines of one hold: a header, then one per vote. */
export function holdLines(h: ApprovalHoldView): string[] {
  const out = [
    `${h.holdId}  run ${h.runId} (${h.runStatus})  org=${h.orgId}  ${h.workflow}  ${holdSubject(h)}  ${h.status}` +
      `${h.outcome === null ? '' : `  ${h.outcome}`}${h.status === 'pending' && h.expiresAt !== null ? `  expires ${h.expiresAt}` : ''}`,
  ];
  for (const v of h.votes) {
    const comment = v.comment.trim() === '' ? '' : `  "${v.comment.replace(/\s+/g, ' ').trim().slice(0, 120)}"`;
    out.push(`    ${v.at}  ${v.decision} by ${v.actor} via ${v.via}${v.counted ? '' : `  ignored: ${v.ignoredReason ?? '?'}`}${comment}`);
  }
  return out;
}

export const decisionArgs = { runId: Args.string({ required: true, description: 'run id (as "svc-admin approvals list" prints it)' }) };

export const decisionFlags = {
  ...databaseFlag,
  actor: Flags.string({ description: 'who decides: a user the hold\'s approval rule names (checked as for a comment or `svc approve`)', required: true }),
  job: Flags.string({ description: 'decide only the holds of this job (its name in the workflow); default: every pending hold of the run' }),
  comment: Flags.string({ description: `why, kept with the decision (at most ${MAX_APPROVAL_COMMENT_LENGTH} characters)` }),
};

export interface DecisionOutput {
  log(line: string): void;
  jsonEnabled(): boolean;
}

/** Decides every pending hold of the run (or of `--job`) as `--actor`; throws when nothing counted it. */
export async function decideAsOperator(
  output: DecisionOutput,
  decision: 'approve' | 'reject',
  runIdArg: string,
  flags: { actor: string; job?: string | undefined; comment?: string | undefined; 'database-url'?: string | undefined },
): Promise<DecideResult> {
  const runId = checkRunId(runIdArg);
  const actor = flags.actor.trim();
  if (actor === '' || actor.length > 200) throw new InputError(USAGE_ERROR_CODE, '--actor names who decides: 1 to 200 characters');
  if (flags.job !== undefined && flags.job.trim() === '') throw new InputError(USAGE_ERROR_CODE, '--job names a job of the run; it cannot be empty');
  if (flags.comment !== undefined && flags.comment.length > MAX_APPROVAL_COMMENT_LENGTH) {
    throw new InputError(USAGE_ERROR_CODE, `--comment is at most ${MAX_APPROVAL_COMMENT_LENGTH} characters (got ${flags.comment.length})`);
  }
  const config = await adminConfig();
  const result = await withDatabase(databaseUrl(config, flags['database-url']), async (pool) => {
    const orgId = await orgOfRun(pool, runId);
    if (orgId === null) throw new NotFoundError('SVC_ERR_RUN_NOT_FOUND', `no run ${runId}; list held runs with "svc-admin approvals list --pending"`);
    // Team and role clauses: the person the relay's people directory gives that login.
    const decided = await decideRun(
      pool,
      { orgId, runId, actor, decision, via: 'admin', ...(flags.comment !== undefined ? { comment: flags.comment } : {}), ...(flags.job !== undefined ? { job: flags.job } : {}) },
      anyLoginResolver(pool),
    );
    const refused = decided.decisions.every((d) => !d.counted);
    await recordAudit(pool, { orgId, actor: operatorActor(), action: `run.${decision}`, target: `run:${runId}`, outcome: refused ? 'refused' : 'ok', detail: `as ${actor}: ${decided.message}`, via: 'admin' });
    return decided;
  });
  const refused = notCountedError(result);
  if (refused !== undefined) throw refused;
  if (!output.jsonEnabled()) {
    const { out, ignored } = approvalLines(result);
    for (const line of out) output.log(line);
    for (const line of ignored) process.stderr.write(`${line}\n`);
  }
  return result;
}
