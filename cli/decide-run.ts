// What `svc approve` and `svc reject` share: the run id argument, `--job` and `--comment`, the
// request through the Platform (the relay's `POST /v1/orgs/:org/runs/:run/approve|reject`; the
// decider is the token's user), the printed result, and the exit code of a decision the hold did
// not count (1, with the reason the orchestrator gave).
import { Args, Flags } from '@oclif/core';
import { MAX_APPROVAL_COMMENT_LENGTH, type ApprovalResult } from '../schemas/wire/relay.ts';
import type { ApprovalDecisionBody } from '../schemas/http/approvals.ts';
import { USAGE_ERROR_CODE } from '../core/cli/base-command.ts';
import { InputError } from '../core/errors.ts';
import { approvalLines, notCountedError } from '../core/cli/approval-outcome.ts';

export type Decision = 'approve' | 'reject';

export const decisionArgs = {
  run_id: Args.string({ required: true, description: 'run id (as the dashboard, "svc runs list" or the pull request comment print it)' }),
};

export const decisionFlags = {
  job: Flags.string({ description: 'decide only the holds of this job (its name in the workflow); default: every pending hold of the run' }),
  comment: Flags.string({ description: `why, kept with the decision (at most ${MAX_APPROVAL_COMMENT_LENGTH} characters)` }),
};

/** The request body; a usage error (exit 2) for an empty job name or a comment too long. */
export function decisionBody(flags: { job?: string | undefined; comment?: string | undefined }): ApprovalDecisionBody {
  if (flags.job !== undefined && flags.job.trim() === '') throw new InputError(USAGE_ERROR_CODE, '--job names a job of the run; it cannot be empty');
  if (flags.comment !== undefined && flags.comment.length > MAX_APPROVAL_COMMENT_LENGTH) {
    throw new InputError(USAGE_ERROR_CODE, `--comment is at most ${MAX_APPROVAL_COMMENT_LENGTH} characters (got ${flags.comment.length})`);
  }
  return { ...(flags.job !== undefined ? { job: flags.job } : {}), ...(flags.comment !== undefined ? { comment: flags.comment } : {}) };
}

export interface DecisionOutput {
  log(line: string): void;
  jsonEnabled(): boolean;
}

/** Sends the decision through the Platform and prints it; throws when nothing counted it. */
export async function decideThroughPlatform(
  output: DecisionOutput,
  decision: Decision,
  runIdArg: string,
  flags: { job?: string | undefined; comment?: string | undefined },
): Promise<ApprovalResult> {
  const { PlatformClient, checkRunIdArg } = await import('./platform-client.ts');
  const runId = checkRunIdArg(runIdArg);
  const body = decisionBody(flags);
  const client = await PlatformClient.fromConfig();
  const result = await client.decideRun(runId, decision, body);
  const refused = notCountedError(result);
  if (refused !== undefined) throw refused;
  if (!output.jsonEnabled()) {
    const { out, ignored } = approvalLines(result);
    for (const line of out) output.log(line);
    for (const line of ignored) process.stderr.write(`${line}\n`);
  }
  return result;
}
