// Who a relayed change is by (`by` on the wire, for the orchestrator's audit record) and, for an
// approval, the deciding person's teams (provider groups) and roles, from the relay's people store.
import type { ApproverPrincipals, RelayActor } from '../../../schemas/wire/relay.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { personById } from '../people/store.ts';
import { rolesFor } from '../people/roles.ts';

/** What this needs of dashboard/auth.ts's Caller (not imported: auth.ts records refusals through this folder). */
export interface AuditCaller {
  kind: 'pat' | 'platform';
  orgId: string;
  actor: string;
  patId?: string | undefined;
  person?: { id: string; login: string } | undefined;
  roles?: readonly string[] | undefined;
}

export function actorOf(caller: AuditCaller): RelayActor {
  if (caller.person !== undefined) return { kind: 'person', id: caller.person.id, name: caller.person.login };
  if (caller.kind === 'platform') return { kind: 'system', id: '', name: caller.actor };
  return { kind: 'token', id: caller.patId ?? '', name: caller.actor };
}

/**
 * The person behind an approval: their groups as of their last sign-in or refresh, and their roles
 * in the org (narrowed by the token's scopes when `authorize` computed them). Absent for a token
 * without a person: such a caller meets user clauses only.
 */
export async function principalsOf(db: DatabasePool, caller: AuditCaller): Promise<ApproverPrincipals | undefined> {
  if (caller.person === undefined) return undefined;
  const person = await personById(db, caller.person.id);
  if (person === undefined) return undefined;
  const roles = caller.roles ?? (await rolesFor(db, person.id, caller.orgId));
  return { personId: person.id, name: person.displayName.slice(0, 200) || person.login, teams: person.groups.slice(0, 500), roles: [...roles] };
}
