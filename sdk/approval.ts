// Approval gates: who must approve before a run, job or step proceeds. Plain data only.

/** One clause: `count` approvals from any of the listed principals. All clauses must hold. */
export interface ApprovalClause {
  readonly users?: readonly string[];
  readonly teams?: readonly string[];
  readonly roles?: readonly string[];
  /** Approvals needed from this clause. Default 1. */
  readonly count?: number;
}

/**
 * When the gate applies: `always` (default), `untrusted` (trust tier is not `trusted`) or
 * `fork` (the run comes from a fork pull request).
 */
export type ApprovalWhen = 'always' | 'untrusted' | 'fork';

export interface Approval {
  readonly clauses: readonly ApprovalClause[];
  readonly reason?: string;
  /** Seconds before a pending approval expires (the held run or job is rejected). */
  readonly timeoutSeconds?: number;
  readonly when?: ApprovalWhen;
}
