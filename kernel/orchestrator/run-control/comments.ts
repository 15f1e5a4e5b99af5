// `/svc approve` and `/svc reject` in a pull-request comment (spec processing step 7,
// "Authentication" 9). The command acts on the runs of that pull request in that repository
// that await a decision; its argument may name a run (its id or an id prefix of at least 8
// characters) and then a comment. Every outcome, an ignored command included, is written on the
// command's row, so the delivery log shows why a command did nothing.
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { messageOf } from '../../../core/errors.ts';
import { decideRun, type DecideResult } from './approvals.ts';
import type { ActorPrincipals, PrincipalResolver } from './principals.ts';
import { recordAudit } from '../audit/store.ts';
import type { AuditActor } from '../../../schemas/http/audit.ts';

export interface CommentCommand {
  orgId: string;
  deliveryId: string;
  repository: string;
  pullRequest: number | null;
  author: string;
  command: 'approve' | 'reject';
  argument: string;
}

const RUN_PREFIX = /^([0-9a-f]{8}[0-9a-f-]{0,28})(?:\s+|$)/i;

/** Splits `<run id or prefix> <comment>` (both optional). */
export function parseArgument(argument: string): { runPrefix?: string; comment: string } {
  const match = RUN_PREFIX.exec(argument.trim());
  if (match === null) return { comment: argument.trim() };
  return { runPrefix: match[1]!.toLowerCase(), comment: argument.trim().slice(match[0].length).trim() };
}

async function record(pool: DatabasePool, cmd: CommentCommand, outcome: string): Promise<string> {
  await pool.query(sql.unsafe`
    UPDATE approval_commands SET outcome = ${outcome.slice(0, 2000)}, processed_at = now() WHERE org_id = ${cmd.orgId} AND delivery_id = ${cmd.deliveryId}`);
  return outcome;
}

/** Applies a recorded comment command; returns the outcome sentence (also stored on its row). */
export async function applyCommentCommand(pool: DatabasePool, cmd: CommentCommand, resolver?: PrincipalResolver): Promise<string> {
  if (cmd.pullRequest === null) return record(pool, cmd, 'ignored: the comment is not on a pull request');
  const { runPrefix, comment } = parseArgument(cmd.argument);
  const candidates = (await pool.any(sql.unsafe`
    SELECT r.id::text AS id, bool_or(h.status = 'pending') AS pending, max(r.created_at) AS created_at
    FROM runs r JOIN approval_holds h ON h.run_id = r.id
    WHERE r.org_id = ${cmd.orgId} AND r.repository = ${cmd.repository}
      AND r.event->'pullRequest'->>'number' = ${String(cmd.pullRequest)}
      AND (${runPrefix ?? null}::text IS NULL OR r.id::text LIKE ${`${runPrefix ?? ''}%`})
    GROUP BY r.id ORDER BY max(r.created_at) DESC, r.id`)) as unknown as Array<{ id: string; pending: boolean }>;
  // Runs awaiting a decision; when none does, the latest run that had a hold, so the vote is kept
  // with the reason it starts nothing (rejected, expired, cancelled).
  const pending = candidates.filter((c) => c.pending).map((c) => c.id);
  const runs = pending.length > 0 ? pending.sort() : candidates.slice(0, 1).map((c) => c.id);
  if (runs.length === 0) {
    const which = runPrefix === undefined ? '' : ` matching ${runPrefix}`;
    return record(pool, cmd, `ignored: no run${which} of pull request #${cmd.pullRequest} in ${cmd.repository} awaits a decision`);
  }
  // The author's person (through the forge provider's link), looked up once for every run.
  let person: ActorPrincipals | null | undefined;
  const once: PrincipalResolver | undefined = resolver === undefined ? undefined : async (request) => (person ??= await resolver(request));
  const outcomes: string[] = [];
  for (const runId of runs) {
    let outcome: 'ok' | 'refused' | 'failed' = 'ok';
    let line: string;
    try {
      const result: DecideResult = await decideRun(
        pool,
        { orgId: cmd.orgId, runId, actor: cmd.author, decision: cmd.command, via: 'comment', ...(comment !== '' ? { comment } : {}) },
        once,
      );
      const ignored = result.decisions.every((d) => !d.counted);
      if (ignored) outcome = 'refused';
      line = `${ignored ? 'ignored: ' : ''}${result.message}`;
    } catch (error) {
      outcome = 'failed';
      line = `not applied: ${messageOf(error)}`;
    }
    outcomes.push(`run ${runId}: ${line}`);
    const actor: AuditActor =
      person?.personId !== undefined ? { kind: 'person', id: person.personId, name: person.name ?? cmd.author } : { kind: 'forge', id: '', name: cmd.author };
    await recordAudit(pool, { orgId: cmd.orgId, actor, action: `run.${cmd.command}`, target: `run:${runId}`, outcome, detail: line, via: 'comment' });
  }
  return record(pool, cmd, outcomes.join('; '));
}
