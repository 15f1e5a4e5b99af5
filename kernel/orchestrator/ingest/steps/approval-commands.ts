// Step 7: `/svc approve` and `/svc reject` in pull-request comments are commands, not events:
// recorded here before matching (hold mechanics act on the table), and never matched.
import { randomUUID } from 'node:crypto';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import { sql, type DatabasePool } from '../../../services/db/index.ts';

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
): Promise<void> {
  await pool.query(sql.unsafe`
    insert into approval_commands (id, org_id, delivery_id, source_id, repository, pull_request, command, argument, author)
    values (${randomUUID()}, ${orgId}, ${deliveryId}, ${sourceId}, ${event.repository?.fullName ?? ''},
      ${pullRequestNumberOf(event, payload)}, ${command.command}, ${command.argument}, ${event.comment?.author ?? event.sender.login})
    on conflict (org_id, delivery_id) do nothing`);
}
