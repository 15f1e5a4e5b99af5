// The people directory the relay pushes (migration 0906, people.sync.request) and the resolvers
// that give an approver's teams and roles to decideRun: from the relay request itself (the
// dashboard and `svc approve`: the relay names the signed-in person), or by forge login for a
// `/svc approve` comment (the person who signed in through that forge's provider).
import type { CommonQueryMethods } from 'slonik';
import type { DirectoryPerson, ApproverPrincipals } from '../../../schemas/wire/relay.ts';
import { sql } from '../../services/db/index.ts';
import type { ActorPrincipals, PrincipalResolver } from './principals.ts';

/** Stores (upserts) people of an org; returns how many. */
export async function syncPeople(db: CommonQueryMethods, orgId: string, people: readonly DirectoryPerson[]): Promise<number> {
  for (const p of people) {
    await db.query(sql.unsafe`
      INSERT INTO people_directory (org_id, person_id, name, provider, login, teams, roles, disabled, updated_at)
      VALUES (${orgId}, ${p.personId}, ${p.name}, ${p.provider}, ${p.login}, ${sql.array(p.teams, 'text')}, ${sql.array(p.roles, 'text')}, ${p.disabled}, now())
      ON CONFLICT (org_id, person_id) DO UPDATE SET name = EXCLUDED.name, provider = EXCLUDED.provider, login = EXCLUDED.login,
        teams = EXCLUDED.teams, roles = EXCLUDED.roles, disabled = EXCLUDED.disabled, updated_at = now()`);
  }
  return people.length;
}

/** The person a login of `provider` (any provider: null) belongs to in an org, or null (not linked, or disabled). */
export async function personByLogin(db: CommonQueryMethods, orgId: string, provider: string | null, login: string): Promise<ActorPrincipals | null> {
  const row = (await db.maybeOne(sql.unsafe`
    SELECT person_id, name, teams, roles FROM people_directory
    WHERE org_id = ${orgId} AND (${provider}::text IS NULL OR provider = ${provider}) AND lower(login) = lower(${login}) AND NOT disabled
    ORDER BY updated_at DESC LIMIT 1`)) as { person_id: string; name: string; teams: string[]; roles: string[] } | null;
  return row === null ? null : { personId: row.person_id, name: row.name, teams: row.teams, roles: row.roles };
}

/** For a `/svc approve` comment on a `provider` forge: the author's person, through their login. */
export function forgeLoginResolver(db: CommonQueryMethods, provider: string): PrincipalResolver {
  return ({ orgId, actor }) => personByLogin(db, orgId, provider, actor);
}

/** For `svc-admin approvals approve --actor <login>`: the person with that login, whichever provider. */
export function anyLoginResolver(db: CommonQueryMethods): PrincipalResolver {
  return ({ orgId, actor }) => personByLogin(db, orgId, null, actor);
}

/** For a relayed decision: what the relay said of the signed-in person (absent: not a person). */
export function relayedPrincipals(principals: ApproverPrincipals | undefined): PrincipalResolver {
  const resolved: ActorPrincipals | null =
    principals === undefined ? null : { personId: principals.personId, name: principals.name, teams: principals.teams, roles: principals.roles };
  return async () => resolved;
}
