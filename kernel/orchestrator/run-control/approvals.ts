// Approval holds (spec lock field `approval`, "Authentication" 9; docs/run-control.md). A hold is
// one pending decision on a run (workflow level), a job (its own gate, or a secret context's
// required reviewers) or a step of a running job (step-holds.ts). Decisions lock the run, then the hold, and act only while the hold is
// `pending`: two approvals arriving together release it once, and an approval after a rejection,
// an expiry or a cancel starts nothing (its vote is kept with the reason it was ignored).
import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import type { LockApprovalClause } from '../../../schemas/lock.ts';
import { notify, sql, type DatabasePool } from '../../services/db/index.ts';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { cancelRunTx } from '../dispatch/cancel.ts';
import { notifyJobsQueued, RUN_CONTROL_CHANNEL } from '../dispatch/notify.ts';
import { progressRun, recordJobComplete } from '../dispatch/progression.ts';
import { approvalApplies } from './gates-plan.ts';
import { stepHoldDecided } from './step-hold-decision.ts';
import { clauseAllows, clausesMet, needsPrincipals, noPrincipals, refusalReason, type ActorPrincipals, type PrincipalResolver } from './principals.ts';

export { RUN_CONTROL_CHANNEL };

/** Wakes every node's run-control worker (gates, admissions); delivered at commit. */
export async function notifyRunControl(tx: CommonQueryMethods): Promise<void> {
  await notify(tx, RUN_CONTROL_CHANNEL, '');
}

export type HoldLevel = 'workflow' | 'job' | 'step' | 'context';
export type Decision = 'approve' | 'reject';
export type DecisionVia = 'comment' | 'cli' | 'dashboard' | 'admin';

/** Who ended a hold that no person decided. */
export const APPROVAL_TIMEOUT_ACTOR = 'svc:approval-timeout';

export { approvalApplies };

export interface NewHold {
  orgId: string;
  runId: string;
  jobId: string | null;
  level: HoldLevel;
  stepIndex?: number;
  stepName?: string;
  context?: string;
  clauses: readonly LockApprovalClause[];
  reason?: string;
  timeoutSeconds?: number;
}

export interface HoldRow {
  id: string;
  run_id: string;
  job_id: string | null;
  level: HoldLevel;
  context: string | null;
  step_index: number | null;
  step_name: string | null;
  clauses: LockApprovalClause[];
  reason: string | null;
  status: 'pending' | 'approved' | 'rejected' | 'expired' | 'cancelled';
  outcome: string | null;
  timeout_seconds: number | null;
}

const HOLD_COLUMNS = sql.fragment`id::text AS id, run_id::text AS run_id, job_id::text AS job_id, level, context, step_index, step_name, clauses, reason, status, outcome,
  CASE WHEN expires_at IS NULL THEN NULL ELSE round(extract(epoch FROM expires_at - created_at))::int END AS timeout_seconds`;

/** The hold for one gate, created pending the first time (idempotent: a second call finds it). */
export async function ensureHold(tx: CommonQueryMethods, hold: NewHold): Promise<HoldRow> {
  const expires = hold.timeoutSeconds === undefined ? null : sql.fragment`clock_timestamp() + ${hold.timeoutSeconds} * interval '1 second'`;
  await tx.query(sql.unsafe`
    INSERT INTO approval_holds (id, org_id, run_id, job_id, level, step_index, step_name, context, clauses, reason, expires_at)
    VALUES (${randomUUID()}, ${hold.orgId}, ${hold.runId}, ${hold.jobId}, ${hold.level}, ${hold.stepIndex ?? null}, ${hold.stepName ?? null},
            ${hold.context ?? null}, ${sql.jsonb(hold.clauses as never)}, ${hold.reason ?? null}, ${expires})
    ON CONFLICT DO NOTHING`);
  return (await tx.one(sql.unsafe`
    SELECT ${HOLD_COLUMNS} FROM approval_holds
    WHERE run_id = ${hold.runId} AND job_id IS NOT DISTINCT FROM ${hold.jobId}::uuid AND level = ${hold.level}
      AND step_index IS NOT DISTINCT FROM ${hold.stepIndex ?? null}::int AND context IS NOT DISTINCT FROM ${hold.context ?? null}::text`)) as unknown as HoldRow;
}

/** The hold is approved: its run or job moves on (a job goes back through its remaining gates). */
async function release(tx: CommonQueryMethods, hold: HoldRow, outcome: string, by: string): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE approval_holds SET status = 'approved', outcome = ${outcome}, decided_by = ${by}, decided_at = now() WHERE id = ${hold.id}`);
  if (hold.level === 'step') {
    // The job is running on its agent, paused before the step: the agent runs it now.
    await stepHoldDecided(tx, hold, 'approved', outcome);
    return;
  }
  if (hold.job_id === null) {
    await tx.query(sql.unsafe`UPDATE runs SET status = 'queued', reason = NULL, updated_at = now() WHERE id = ${hold.run_id} AND status = 'held'`);
    const progressed = await progressRun(tx, hold.run_id);
    if (progressed.queued.length === 0) await notifyJobsQueued(tx);
    await notifyRunControl(tx);
    return;
  }
  await tx.query(sql.unsafe`
    UPDATE jobs SET status = 'waiting', ready_at = now(), reason = NULL, updated_at = now() WHERE id = ${hold.job_id} AND status = 'held'`);
  await notifyRunControl(tx);
}

/** The hold ends without approval: a workflow hold cancels the run, a job hold cancels the job. */
async function end(tx: CommonQueryMethods, hold: HoldRow, status: 'rejected' | 'expired', outcome: string, by: string): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE approval_holds SET status = ${status}, outcome = ${outcome}, decided_by = ${by}, decided_at = now() WHERE id = ${hold.id}`);
  const what = hold.level === 'context' ? `secret context ${hold.context ?? ''} approval` : 'approval';
  const reason = `${what[0]!.toUpperCase()}${what.slice(1)} ${outcome}`;
  if (hold.level === 'step') {
    // The agent fails the step with this reason; the job then fails as for any failed step.
    await stepHoldDecided(tx, hold, status, outcome);
    return;
  }
  if (hold.job_id === null) {
    await cancelRunTx(tx, hold.run_id, by, { reason });
    return;
  }
  const job = await tx.maybeOne(sql.unsafe`
    UPDATE jobs SET status = 'cancelled', reason = ${reason}, cancelled_by = ${by}, finished_at = now(), updated_at = now()
    WHERE id = ${hold.job_id} AND status IN ('held', 'waiting') RETURNING id`);
  if (job === null) return;
  await recordJobComplete(tx, hold.run_id, hold.job_id, 'cancelled', { reason });
  await progressRun(tx, hold.run_id);
}

export interface DecideRequest {
  orgId: string;
  runId: string;
  actor: string;
  decision: Decision;
  via: DecisionVia;
  comment?: string;
  /** Decide only the holds of this job (by name); default every pending hold of the run. */
  job?: string;
}

export interface HoldDecision {
  holdId: string | null;
  level: HoldLevel | null;
  job: string | null;
  context: string | null;
  /** A step hold: the step's name. */
  step?: string;
  /** The hold's status after this decision. */
  status: string;
  counted: boolean;
  ignoredReason?: string;
}

export interface DecideResult {
  runId: string;
  runStatus: string;
  decisions: HoldDecision[];
  /** One sentence for the person who decided. */
  message: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function checkRequest(req: DecideRequest): void {
  if (!UUID.test(req.runId)) throw new InputError('SVC_ERR_RUNS_ID_INVALID', `"${String(req.runId).slice(0, 80)}" is not a run id (a UUID, as "svc runs show" and the dashboard print it)`);
  if (typeof req.actor !== 'string' || req.actor.trim() === '' || req.actor.length > 200) {
    throw new InputError('SVC_ERR_APPROVAL_ACTOR_INVALID', 'an approval decision must name who decided (1 to 200 characters)');
  }
  if ((req.comment?.length ?? 0) > 2000) throw new InputError('SVC_ERR_APPROVAL_COMMENT_TOO_LONG', 'an approval comment is at most 2000 characters');
}

async function recordVote(
  tx: CommonQueryMethods,
  req: DecideRequest,
  holdId: string | null,
  counted: boolean,
  ignoredReason: string | null,
  principals: ActorPrincipals | null,
): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO approval_votes (id, org_id, run_id, hold_id, actor, decision, via, comment, counted, ignored_reason, principals)
    VALUES (${randomUUID()}, ${req.orgId}, ${req.runId}, ${holdId}, ${req.actor}, ${req.decision}, ${req.via}, ${req.comment ?? ''},
            ${counted}, ${ignoredReason}, ${principals === null ? null : sql.jsonb(principals as never)})`);
}

async function approversOf(tx: CommonQueryMethods, holdId: string): Promise<Array<{ actor: string; principals: ActorPrincipals | null }>> {
  return (await tx.any(sql.unsafe`
    SELECT actor, principals FROM approval_votes WHERE hold_id = ${holdId} AND counted AND decision = 'approve'`)) as unknown as Array<{
    actor: string;
    principals: ActorPrincipals | null;
  }>;
}

/** Decides one pending hold for `req.actor` (the run and the hold are locked). */
async function decideHold(tx: CommonQueryMethods, req: DecideRequest, hold: HoldRow & { job_name: string | null }, principals: ActorPrincipals | null): Promise<HoldDecision> {
  const base = { holdId: hold.id, level: hold.level, job: hold.job_name, context: hold.context, ...(hold.step_name === null ? {} : { step: hold.step_name }) };
  if (!hold.clauses.some((c) => clauseAllows(c, req.actor, principals))) {
    const why = refusalReason(hold.clauses, req.actor, principals, hold.level);
    await recordVote(tx, req, hold.id, false, why, principals);
    return { ...base, status: hold.status, counted: false, ignoredReason: why };
  }
  await recordVote(tx, req, hold.id, true, null, principals);
  const said = req.comment !== undefined && req.comment.trim() !== '' ? `: ${req.comment.trim()}` : '';
  if (req.decision === 'reject') {
    await end(tx, hold, 'rejected', `rejected by ${req.actor}${said}`, req.actor);
    return { ...base, status: 'rejected', counted: true };
  }
  const approvers = await approversOf(tx, hold.id);
  if (!clausesMet(hold.clauses, approvers)) return { ...base, status: 'pending', counted: true };
  const names = [...new Set(approvers.map((a) => a.actor))].join(', ');
  await release(tx, hold, `approved by ${names}`, req.actor);
  return { ...base, status: 'approved', counted: true };
}

function summary(req: DecideRequest, decisions: readonly HoldDecision[]): string {
  const counted = decisions.filter((d) => d.counted);
  if (counted.length === 0) return decisions[0]?.ignoredReason ?? `nothing on run ${req.runId} awaits approval`;
  return counted
    .map((d) => {
      const what =
        d.level === 'workflow'
          ? 'the run'
          : d.level === 'context'
            ? `job ${d.job ?? '?'} (context ${d.context ?? '?'})`
            : d.level === 'step'
              ? `step ${d.step ?? '?'} of job ${d.job ?? '?'}`
              : `job ${d.job ?? '?'}`;
      return d.status === 'pending' ? `${req.actor}'s approval of ${what} is recorded; more approvals are needed` : `${what}: ${d.status}`;
    })
    .join('; ');
}

/**
 * Applies `req` to every pending hold of the run (or of one job). Resolves the actor's teams and
 * roles first, outside the transaction, only when a clause names teams or roles.
 */
export async function decideRun(pool: DatabasePool, req: DecideRequest, resolver: PrincipalResolver = noPrincipals): Promise<DecideResult> {
  checkRequest(req);
  const preview = (await pool.any(sql.unsafe`
    SELECT clauses FROM approval_holds WHERE run_id = ${req.runId} AND org_id = ${req.orgId} AND status = 'pending'`)) as unknown as Array<{ clauses: LockApprovalClause[] }>;
  const needed = preview.some((h) => h.clauses.some((c) => needsPrincipals(c, req.actor)));
  const principals = needed ? await resolver({ orgId: req.orgId, runId: req.runId, actor: req.actor }) : null;
  return pool.transaction(async (tx) => {
    const run = (await tx.maybeOne(sql.unsafe`SELECT status FROM runs WHERE id = ${req.runId} AND org_id = ${req.orgId} FOR NO KEY UPDATE`)) as { status: string } | null;
    if (run === null) throw new NotFoundError('SVC_ERR_RUNS_NOT_FOUND', `no run ${req.runId} in org ${req.orgId}`);
    const jobFilter = req.job === undefined ? sql.fragment`TRUE` : sql.fragment`j.name = ${req.job}`;
    const holds = (await tx.any(sql.unsafe`
      SELECT ${HOLD_COLUMNS}, (SELECT j.name FROM jobs j WHERE j.id = h.job_id) AS job_name FROM approval_holds h
      WHERE h.run_id = ${req.runId} AND h.status = 'pending'
        AND (h.job_id IS NULL AND ${req.job === undefined} OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = h.job_id AND ${jobFilter}))
      ORDER BY h.created_at, h.id FOR UPDATE OF h`)) as unknown as Array<HoldRow & { job_name: string | null }>;
    const decisions: HoldDecision[] = [];
    if (holds.length === 0) {
      const last = (await tx.maybeOne(sql.unsafe`
        SELECT id::text AS id, level, status, outcome FROM approval_holds WHERE run_id = ${req.runId} ORDER BY created_at DESC, id DESC LIMIT 1`)) as {
        id: string;
        level: HoldLevel;
        status: string;
        outcome: string | null;
      } | null;
      const why =
        last === null
          ? `run ${req.runId} (${run.status}) has no approval hold${req.job === undefined ? '' : ` for job ${req.job}`}`
          : `nothing on run ${req.runId} awaits approval: its ${last.level} hold is ${last.status}${last.outcome === null ? '' : ` (${last.outcome})`}`;
      await recordVote(tx, req, last?.id ?? null, false, why, principals);
      decisions.push({ holdId: last?.id ?? null, level: last?.level ?? null, job: null, context: null, status: last?.status ?? 'none', counted: false, ignoredReason: why });
    }
    for (const hold of holds) decisions.push(await decideHold(tx, req, hold, principals));
    const after = (await tx.oneFirst(sql.unsafe`SELECT status FROM runs WHERE id = ${req.runId}`)) as string;
    return { runId: req.runId, runStatus: after, decisions, message: summary(req, decisions) };
  });
}

/** Ends pending holds past their `timeoutSeconds` (a bounded batch); returns how many ended. */
export async function expireHolds(pool: DatabasePool, limit = 100): Promise<number> {
  const due = (await pool.any(sql.unsafe`
    SELECT id::text AS id, run_id::text AS run_id FROM approval_holds
    WHERE status = 'pending' AND expires_at <= clock_timestamp() ORDER BY expires_at LIMIT ${limit}`)) as unknown as Array<{ id: string; run_id: string }>;
  let ended = 0;
  for (const { id, run_id: runId } of due) {
    ended += await pool.transaction(async (tx) => {
      const run = await tx.maybeOne(sql.unsafe`SELECT id FROM runs WHERE id = ${runId} FOR NO KEY UPDATE`);
      if (run === null) return 0;
      const hold = (await tx.maybeOne(sql.unsafe`
        SELECT ${HOLD_COLUMNS} FROM approval_holds WHERE id = ${id} AND status = 'pending' AND expires_at <= clock_timestamp() FOR UPDATE`)) as HoldRow | null;
      if (hold === null) return 0;
      await end(tx, hold, 'expired', `expired: no decision within ${hold.timeout_seconds ?? '?'} s`, APPROVAL_TIMEOUT_ACTOR);
      return 1;
    });
  }
  return ended;
}

/** The hold rows of a run, oldest first, with their votes (for `svc runs show`, admin, tests). */
export async function holdsOfRun(pool: DatabasePool | CommonQueryMethods, runId: string): Promise<Array<HoldRow & { votes: Array<{ actor: string; decision: string; via: string; counted: boolean; ignored_reason: string | null }> }>> {
  const holds = (await pool.any(sql.unsafe`
    SELECT ${HOLD_COLUMNS} FROM approval_holds WHERE run_id = ${runId} ORDER BY created_at, id`)) as unknown as HoldRow[];
  const votes = (await pool.any(sql.unsafe`
    SELECT hold_id::text AS hold_id, actor, decision, via, counted, ignored_reason FROM approval_votes WHERE run_id = ${runId} ORDER BY created_at, id`)) as unknown as Array<{
    hold_id: string | null;
    actor: string;
    decision: string;
    via: string;
    counted: boolean;
    ignored_reason: string | null;
  }>;
  return holds.map((h) => ({ ...h, votes: votes.filter((v) => v.hold_id === h.id).map(({ hold_id: _hold, ...v }) => v) }));
}
