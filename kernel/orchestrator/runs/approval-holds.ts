// Approval holds as an operator reads them (`svc-admin approvals list`): every hold with its run,
// job, status, outcome, expiry and the votes it received (ignored ones with their reason),
// straight from the orchestrator database. Decisions themselves go through
// run-control/approvals.ts `decideRun`; this file only reads.
import { Type, type Static } from 'typebox';
import type { ApprovalHoldView, ApprovalVoteView } from '../../../schemas/http/approvals.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

export const DEFAULT_APPROVAL_LIST_LIMIT = 100;
export const MAX_APPROVAL_LIST_LIMIT = 1000;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const HoldRow = Type.Object({
  id: Type.String(),
  org_id: Type.String(),
  run_id: Type.String(),
  run_status: Type.String(),
  workflow: Type.String(),
  repository: Type.String(),
  level: Type.String(),
  job: Nullable(Type.String()),
  context: Nullable(Type.String()),
  step_name: Nullable(Type.String()),
  reason: Nullable(Type.String()),
  status: Type.String(),
  outcome: Nullable(Type.String()),
  decided_by: Nullable(Type.String()),
  created_at: Type.Number(),
  expires_at: Nullable(Type.Number()),
});

const VoteRow = Type.Object({
  hold_id: Type.String(),
  actor: Type.String(),
  decision: Type.String(),
  via: Type.String(),
  comment: Type.String(),
  counted: Type.Boolean(),
  ignored_reason: Nullable(Type.String()),
  created_at: Type.Number(),
});

export interface ApprovalHoldFilter {
  /** Only the holds of this run (a UUID; checked by the caller). */
  runId?: string;
  /** Only holds still waiting for a decision. */
  pendingOnly?: boolean;
  limit?: number;
}

const iso = (ms: number): string => new Date(ms).toISOString();

function toView(h: Static<typeof HoldRow>, votes: ApprovalVoteView[]): ApprovalHoldView {
  return {
    holdId: h.id,
    orgId: h.org_id,
    runId: h.run_id,
    runStatus: h.run_status,
    workflow: h.workflow,
    repository: h.repository,
    level: h.level,
    job: h.job,
    context: h.context,
    step: h.step_name,
    reason: h.reason,
    status: h.status,
    outcome: h.outcome,
    decidedBy: h.decided_by,
    createdAt: iso(h.created_at),
    expiresAt: h.expires_at === null ? null : iso(h.expires_at),
    votes,
  };
}

/** Holds newest first, each with its votes oldest first. */
export async function listApprovalHolds(pool: DatabasePool, filter: ApprovalHoldFilter = {}): Promise<ApprovalHoldView[]> {
  const limit = Math.min(MAX_APPROVAL_LIST_LIMIT, Math.max(1, filter.limit ?? DEFAULT_APPROVAL_LIST_LIMIT));
  const conditions = [sql.fragment`true`];
  if (filter.runId !== undefined) conditions.push(sql.fragment`h.run_id = ${filter.runId}`);
  if (filter.pendingOnly === true) conditions.push(sql.fragment`h.status = 'pending'`);
  const holds = await pool.any(sqlTyped(HoldRow, 'approval holds')`
    select h.id::text as id, h.org_id, h.run_id::text as run_id, r.status as run_status, r.workflow, r.repository, h.level,
      j.name as job, h.context, h.step_name, h.reason, h.status, h.outcome, h.decided_by, h.created_at, h.expires_at
    from approval_holds h join runs r on r.id = h.run_id left join jobs j on j.id = h.job_id
    where ${sql.join(conditions, sql.fragment` and `)}
    order by h.created_at desc, h.id desc limit ${limit}`);
  if (holds.length === 0) return [];
  const votes = await pool.any(sqlTyped(VoteRow, 'approval votes of holds')`
    select hold_id::text as hold_id, actor, decision, via, comment, counted, ignored_reason, created_at
    from approval_votes where hold_id = any(${sql.array(holds.map((h) => h.id), 'uuid')})
    order by created_at, id`);
  const byHold = new Map<string, ApprovalVoteView[]>();
  for (const v of votes) {
    const list = byHold.get(v.hold_id) ?? [];
    list.push({ actor: v.actor, decision: v.decision, via: v.via, comment: v.comment, counted: v.counted, ignoredReason: v.ignored_reason, at: iso(v.created_at) });
    byHold.set(v.hold_id, list);
  }
  return holds.map((h) => toView(h, byHold.get(h.id) ?? []));
}

/** The org of a run, or null when there is no such run (svc-admin decides for any org). */
export async function orgOfRun(pool: DatabasePool, runId: string): Promise<string | null> {
  return pool.maybeOneFirst(sqlTyped(Type.Object({ org_id: Type.String() }), 'org of a run')`select org_id from runs where id = ${runId}`);
}
