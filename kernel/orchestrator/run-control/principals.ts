// Who may decide a hold: an actor meets a clause when the clause names them (users, compared
// ignoring case, as forges treat logins) or a team or role the resolver says they have. Every
// clause must gather its `count` distinct approvers; any actor a clause allows may reject.
import type { LockApprovalClause } from '../../../schemas/lock.ts';

/**
 * Teams and roles of an actor: the person the relay's people store links them to (issue 42), with
 * their provider groups (teams) and org roles; null when the actor is no known person.
 */
export interface ActorPrincipals {
  /** The person: two approvals by one person (a comment and the dashboard) count once. */
  personId?: string;
  name?: string;
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

/** True when a clause needs teams or roles the actor's user name alone cannot give. */
export function needsPrincipals(clause: LockApprovalClause, actor: string): boolean {
  return clause.teams.length + clause.roles.length > 0 && !clauseAllows({ ...clause, teams: [], roles: [] }, actor, null);
}

/** Why `actor` may not decide a hold of these clauses: what they need, and what the actor has. */
export function refusalReason(clauses: readonly LockApprovalClause[], actor: string, principals: ActorPrincipals | null, level: string): string {
  const base = `${actor} may not decide this ${level} hold: it needs ${describeClauses(clauses)}`;
  if (!clauses.some((c) => c.teams.length + c.roles.length > 0)) return base;
  if (principals === null) return `${base}; ${actor} is not linked to a signed-in person, so no team or role can be checked (sign in to the relay through the provider, or approve from the dashboard)`;
  const teams = clauses.flatMap((c) => c.teams);
  const roles = clauses.flatMap((c) => c.roles);
  const lacks = [teams.length > 0 ? `not in team ${teams.join(' or ')}` : '', roles.length > 0 ? `without role ${roles.join(' or ')}` : ''].filter((x) => x !== '').join(' and ');
  return `${base}; ${principals.name ?? actor} is ${lacks}`;
}

/** Who an approval counts as: the person when known, else the user name. */
const approverKey = (a: { actor: string; principals: ActorPrincipals | null }): string => (a.principals?.personId !== undefined ? `person:${a.principals.personId}` : `user:${fold(a.actor)}`);

/** True when every clause has `count` distinct approvers it allows (distinct people, else user names). */
export function clausesMet(clauses: readonly LockApprovalClause[], approvers: ReadonlyArray<{ actor: string; principals: ActorPrincipals | null }>): boolean {
  return clauses.every((clause) => {
    const allowed = new Set(approvers.filter((a) => clauseAllows(clause, a.actor, a.principals)).map(approverKey));
    return allowed.size >= clause.count;
  });
}
