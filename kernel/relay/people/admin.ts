// Role administration (docs/roles.md): who holds which role in an org and why (an admin's grant,
// or a group mapped to it), and granting or taking back a role. Shared by the admin API
// (people/routes.ts) and `svc-admin relay role …`.
import { Type } from 'typebox';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import { checkOrgId } from '../orgs.ts';
import { checkRole, grantRole, revokeRole, sortRoles, type Role } from './roles.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface OrgMember {
  personId: string;
  provider: string;
  login: string;
  displayName: string;
  disabled: boolean;
  /** Every role held, and where each comes from. */
  roles: Array<{ role: Role; source: 'grant' | `group:${string}` }>;
}

const PersonIdRow = Type.Object({ id: Type.String() });

/** A person by id, or by `<provider>:<login>`; unknown → 404. */
export async function resolvePerson(db: DatabasePool, reference: string): Promise<string> {
  if (typeof reference !== 'string' || reference.length > 300) throw new InputError('SVC_ERR_RELAY_PERSON_INVALID', 'name a person by id (a UUID) or as <provider>:<login>');
  if (UUID.test(reference)) {
    const row = await db.maybeOne(sqlTyped(PersonIdRow)`select id::text as id from relay_people where id = ${reference.toLowerCase()}`);
    if (row !== null) return row.id;
  } else {
    const at = reference.indexOf(':');
    if (at < 1) throw new InputError('SVC_ERR_RELAY_PERSON_INVALID', `"${reference.slice(0, 80)}" names no person: use an id (a UUID) or <provider>:<login>, as "svc-admin relay role list" prints them`);
    const row = await db.maybeOne(sqlTyped(PersonIdRow)`
      select id::text as id from relay_people where provider = ${reference.slice(0, at)} and login = ${reference.slice(at + 1)} order by last_seen_at desc limit 1`);
    if (row !== null) return row.id;
  }
  throw new NotFoundError('SVC_ERR_RELAY_PERSON_NOT_FOUND', `no person "${reference.slice(0, 80)}" has signed in at this relay; a person exists after their first sign-in through a provider`);
}

const MemberRow = Type.Object({
  id: Type.String(),
  provider: Type.String(),
  login: Type.String(),
  display_name: Type.String(),
  disabled: Type.Boolean(),
  role: Type.String(),
  source: Type.String(),
});

/** People holding a role in an org, with where each role comes from (a disabled person is listed, with their roles, as disabled). */
export async function orgMembers(db: DatabasePool, orgId: string): Promise<OrgMember[]> {
  checkOrgId(orgId);
  const rows = await db.any(sqlTyped(MemberRow)`
    select p.id::text as id, p.provider, p.login, p.display_name, p.disabled_at is not null as disabled, g.role, 'grant' as source
    from relay_role_grants g join relay_people p on p.id = g.person_id where g.org_id = ${orgId}
    union all
    select p.id::text, p.provider, p.login, p.display_name, p.disabled_at is not null, m.role, 'group:' || m.group_name
    from relay_group_roles m join relay_people p on p.provider = m.provider and m.group_name = any (p.groups) where m.org_id = ${orgId}
    order by 3, 1, 6, 7`);
  const byPerson = new Map<string, OrgMember>();
  for (const r of rows) {
    const member = byPerson.get(r.id) ?? { personId: r.id, provider: r.provider, login: r.login, displayName: r.display_name, disabled: r.disabled, roles: [] };
    byPerson.set(r.id, member);
    member.roles.push({ role: checkRole(r.role), source: r.source as OrgMember['roles'][number]['source'] });
  }
  for (const m of byPerson.values()) {
    const order = sortRoles(m.roles.map((r) => r.role));
    m.roles.sort((a, b) => order.indexOf(a.role) - order.indexOf(b.role) || a.source.localeCompare(b.source));
  }
  return [...byPerson.values()];
}

export async function grant(db: DatabasePool, orgId: string, reference: string, role: string, by: string): Promise<{ personId: string; role: Role; changed: boolean }> {
  checkOrgId(orgId);
  const checked = checkRole(role);
  const personId = await resolvePerson(db, reference);
  const exists = await db.maybeOne(sqlTyped(Type.Object({ one: Type.Number() }))`select 1 as one from relay_orgs where org_id = ${orgId}`);
  if (exists === null) throw new NotFoundError('SVC_ERR_RELAY_ORG_NOT_FOUND', `org "${orgId}" does not exist; create it with "relay org create ${orgId}"`);
  return { personId, role: checked, changed: await grantRole(db, orgId, personId, checked, by) };
}

export async function revoke(db: DatabasePool, orgId: string, reference: string, role: string): Promise<{ personId: string; role: Role; changed: boolean }> {
  checkOrgId(orgId);
  const checked = checkRole(role);
  const personId = await resolvePerson(db, reference);
  return { personId, role: checked, changed: await revokeRole(db, orgId, personId, checked) };
}
