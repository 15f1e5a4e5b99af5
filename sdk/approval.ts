// Approval gates: who must approve before a run, job or step proceeds. Plain data, and two
// helpers that build a clause (`team('release', 2)`: two approvals from team release).
import type { OrgRole } from '../schemas/org-roles.ts';

/** One clause: `count` approvals from any of the listed principals. All clauses must hold. */
export interface ApprovalClause {
  readonly users?: readonly string[];
  /** Provider groups of signed-in people (the relay's people store; a GitHub team is `org/slug`). */
  readonly teams?: readonly string[];
  /** Org roles: viewer, developer, approver, admin. */
  readonly roles?: readonly OrgRole[];
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

/** A clause met by `count` distinct members of team (provider group) `name`. */
export function team(name: string, count = 1): ApprovalClause {
  return { teams: [name], count };
}

/** A clause met by `count` distinct people holding org role `name` (e.g. `role('approver')`). */
export function role(name: OrgRole, count = 1): ApprovalClause {
  return { roles: [name], count };
}
