// Step 7: `/svc approve` and `/svc reject` in pull-request comments are commands, not events:
// recorded here before matching, applied to the pull request's held runs by run-control
// (run-control/comments.ts), and never matched. A redelivered comment is recorded once.
import { randomUUID } from 'node:crypto';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import { sql, type DatabasePool } from '../../../services/db/index.ts';
import type { CommentCommand } from '../../run-control/comments.ts';

export interface ApprovalCommand {
  command: 'approve' | 'reject';
  argument: string;
}

const COMMAND = /^\/svc\s+(approve|reject)\b[ \t]*([^\r\n]*)/m;

/** The command a comment carries, or null. Only a comment's first command counts. */
export function parseApprovalCommand(event: NormalizedEvent): ApprovalCommand | null {
  if (event.comment === null) return null;
  if (event.type !== 'comment' && event.type !== 'review_comment' && event.type !== 'review') return null;
  if (event.action !== null && event.action !== 'created') return null;
  const match = COMMAND.exec(event.comment.body.trim());
  if (!match) return null;
  return { command: match[1] as 'approve' | 'reject', argument: (match[2] ?? '').trim().slice(0, 500) };
}

/** The pull request a comment is on: the normalized event's, else GitHub's `issue.number` of a PR comment. */
export function pullRequestNumberOf(event: NormalizedEvent, payload: unknown): number | null {
  if (event.pullRequest !== null) return event.pullRequest.number;
  const issue = (payload as { issue?: { number?: unknown; pull_request?: unknown } } | null)?.issue;
  return issue && issue.pull_request && Number.isInteger(issue.number) ? (issue.number as number) : null;
}

export async function recordApprovalCommand(
  pool: DatabasePool,
  orgId: string,
  deliveryId: string,
  sourceId: string,
  event: NormalizedEvent,
  command: ApprovalCommand,
  payload: unknown,
): Promise<{ fresh: boolean; command: CommentCommand }> {
  const recorded: CommentCommand = {
    orgId,
    deliveryId,
    repository: event.repository?.fullName ?? '',
    pullRequest: pullRequestNumberOf(event, payload),
    author: event.comment?.author ?? event.sender.login,
    command: command.command,
    argument: command.argument,
  };
  const row = await pool.maybeOne(sql.unsafe`
    insert into approval_commands (id, org_id, delivery_id, source_id, repository, pull_request, command, argument, author)
    values (${randomUUID()}, ${orgId}, ${deliveryId}, ${sourceId}, ${recorded.repository},
      ${recorded.pullRequest}, ${command.command}, ${command.argument}, ${recorded.author})
    on conflict (org_id, delivery_id) do nothing returning id`);
  return { fresh: row !== null, command: recorded };
}
