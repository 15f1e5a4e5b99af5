// Who a relayed change is by (`by` on the wire, for the orchestrator's audit record) and, for an
// approval, the deciding person's teams (provider groups) and roles, from the relay's people store.
import type { ApproverPrincipals, RelayActor } from '../../../schemas/wire/relay.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { Caller } from '../dashboard/auth.ts';
import { personById } from '../people/store.ts';
import { rolesFor } from '../people/roles.ts';

export function actorOf(caller: Caller): RelayActor {
  if (caller.person !== undefined) return { kind: 'person', id: caller.person.id, name: caller.person.login };
  if (caller.kind === 'platform') return { kind: 'system', id: '', name: caller.actor };
  return { kind: 'token', id: caller.patId ?? '', name: caller.actor };
}

/**
 * The person behind an approval: their groups as of their last sign-in or refresh, and their roles
 * in the org (narrowed by the token's scopes when `authorize` computed them). Absent for a token
 * without a person: such a caller meets user clauses only.
 */
export async function principalsOf(db: DatabasePool, caller: Caller): Promise<ApproverPrincipals | undefined> {
  if (caller.person === undefined) return undefined;
  const person = await personById(db, caller.person.id);
  if (person === undefined) return undefined;
  const roles = caller.roles ?? (await rolesFor(db, person.id, caller.orgId));
  return { personId: person.id, name: person.displayName.slice(0, 200) || person.login, teams: person.groups.slice(0, 500), roles: [...roles] };
}
