// Who may decide a hold: an actor meets a clause when the clause names them (users, compared
// ignoring case, as forges treat logins) or a team or role the resolver says they have. Every
// clause must gather its `count` distinct approvers; any actor a clause allows may reject.
import type { LockApprovalClause } from '../../../schemas/lock.ts';

/** Teams and roles of an actor, from the source provider; null when it cannot say. */
export interface ActorPrincipals {
  teams: readonly string[];
  roles: readonly string[];
}

export type PrincipalResolver = (request: { orgId: string; runId: string; actor: string }) => Promise<ActorPrincipals | null>;

/** The resolver used when no provider can name teams or roles: team and role clauses match nobody. */
export const noPrincipals: PrincipalResolver = async () => null;

const fold = (s: string): string => s.toLowerCase();

export function clauseAllows(clause: LockApprovalClause, actor: string, principals: ActorPrincipals | null): boolean {
  const me = fold(actor);
  if (clause.users.some((u) => fold(u) === me)) return true;
  if (principals === null) return false;
  const teams = new Set(principals.teams.map(fold));
  const roles = new Set(principals.roles.map(fold));
  return clause.teams.some((t) => teams.has(fold(t))) || clause.roles.some((r) => roles.has(fold(r)));
}

/** One line naming who may decide, for the reason an ignored command gets. */
export function describeClauses(clauses: readonly LockApprovalClause[]): string {
  return clauses
    .map((c) => {
      const who = [
        c.users.length > 0 ? `users ${c.users.join(', ')}` : '',
        c.teams.length > 0 ? `teams ${c.teams.join(', ')}` : '',
        c.roles.length > 0 ? `roles ${c.roles.join(', ')}` : '',
      ].filter((p) => p !== '');
      return `${c.count} of ${who.join('; ')}`;
    })
    .join(' and ');
}

/** True when every clause has `count` distinct approvers it allows. */
export function clausesMet(clauses: readonly LockApprovalClause[], approvers: ReadonlyArray<{ actor: string; principals: ActorPrincipals | null }>): boolean {
  return clauses.every((clause) => {
    const allowed = new Set(approvers.filter((a) => clauseAllows(clause, a.actor, a.principals)).map((a) => fold(a.actor)));
    return allowed.size >= clause.count;
  });
}
