// How both CLIs report an approval decision (`svc approve|reject` through the Platform,
// `svc-admin approvals approve|reject` on the database): the orchestrator's sentence and the run's
// status, what was ignored, and the error (exit 1) when no hold counted the decision.
import type { ApprovalResult } from '../../schemas/wire/relay.ts';
import { ConflictError, type SvcError } from '../errors.ts';

/**
 * The error (exit 1) for a decision no hold counted: the decider is not an approver, or nothing
 * awaits approval (approved, rejected, expired, no hold). The message is the orchestrator's
 * reason. Undefined when at least one hold counted it.
 */
export function notCountedError(result: ApprovalResult): SvcError | undefined {
  if (result.decisions.some((d) => d.counted)) return undefined;
  const reasons = [...new Set(result.decisions.map((d) => d.ignoredReason).filter((r): r is string => r !== undefined))];
  return new ConflictError('SVC_ERR_CLI_APPROVAL_NOT_COUNTED', `not counted: ${reasons.length > 0 ? reasons.join('; ') : result.message}`);
}

/** Lines for a person: the sentence and the run's status (stdout), what was ignored (stderr). */
export function approvalLines(result: ApprovalResult): { out: string[]; ignored: string[] } {
  const out = [result.message, `run ${result.runId}: ${result.runStatus}`];
  const ignored = result.decisions.filter((d) => !d.counted && d.ignoredReason !== undefined).map((d) => `ignored: ${d.ignoredReason}`);
  return { out, ignored };
}
