// Roles of a person in an org (docs/roles.md): the roles an admin granted (relay_role_grants)
// and the roles the person's provider groups map to (relay_group_roles), none while the person is
// disabled. One query answers it, so every relay replica agrees without a cache to invalidate.
import { Type } from 'typebox';
import { InputError } from '../../../core/errors.ts';
import { sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

export const ROLES = ['viewer', 'developer', 'approver', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** A role name from input (CLI, admin API, config), refused with the list when unknown. */
export function checkRole(value: unknown): Role {
  if (!isRole(value)) throw new InputError('SVC_ERR_RELAY_ROLE_INVALID', `"${String(value).slice(0, 60)}" is not a role; use one of ${ROLES.join(', ')}`);
  return value;
}

/** Roles in the order of ROLES, each once. */
export function sortRoles(roles: Iterable<string>): Role[] {
  const set = new Set(roles);
  return ROLES.filter((role) => set.has(role));
}

const RoleRow = Type.Object({ role: Type.String() });

/** The roles of a person in an org: grants ∪ group mapping; none when the person is disabled or unknown. */
export async function rolesFor(db: DatabasePool, personId: string, orgId: string): Promise<Role[]> {
  const rows = await db.any(sqlTyped(RoleRow)`
    select g.role from relay_role_grants g join relay_people p on p.id = g.person_id
    where g.person_id = ${personId} and g.org_id = ${orgId} and p.disabled_at is null
    union
    select m.role from relay_group_roles m join relay_people p on p.provider = m.provider and m.group_name = any (p.groups)
    where p.id = ${personId} and m.org_id = ${orgId} and p.disabled_at is null`);
  return sortRoles(rows.map((r) => r.role));
}

const OrgRow = Type.Object({ org_id: Type.String() });

/** The orgs where a person holds any role (sign-in chooses among them). */
export async function orgsOf(db: DatabasePool, personId: string): Promise<string[]> {
  const rows = await db.any(sqlTyped(OrgRow)`
    select g.org_id from relay_role_grants g join relay_people p on p.id = g.person_id where p.id = ${personId} and p.disabled_at is null
    union
    select m.org_id from relay_group_roles m join relay_people p on p.provider = m.provider and m.group_name = any (p.groups)
    where p.id = ${personId} and p.disabled_at is null
    order by 1`);
  return rows.map((r) => r.org_id);
}

export interface PersonRef {
  id: string;
  login: string;
  displayName: string;
  provider: string;
}

const PersonRefRow = Type.Object({ id: Type.String(), login: Type.String(), display_name: Type.String(), provider: Type.String() });

/** People holding a role in an org, through a grant or a group (role approvers). */
export async function peopleWithRole(db: DatabasePool, orgId: string, role: Role): Promise<PersonRef[]> {
  const rows = await db.any(sqlTyped(PersonRefRow)`
    select p.id::text as id, p.login, p.display_name, p.provider from relay_people p
    where p.disabled_at is null and (
      exists (select 1 from relay_role_grants g where g.person_id = p.id and g.org_id = ${orgId} and g.role = ${role})
      or exists (select 1 from relay_group_roles m where m.org_id = ${orgId} and m.role = ${role} and m.provider = p.provider and m.group_name = any (p.groups)))
    order by p.login, p.id`);
  return rows.map((r) => ({ id: r.id, login: r.login, displayName: r.display_name, provider: r.provider }));
}

/** Grants a role (idempotent); returns whether it was new. */
export async function grantRole(db: DatabasePool, orgId: string, personId: string, role: Role, grantedBy: string): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    insert into relay_role_grants (org_id, person_id, role, granted_by) values (${orgId}, ${personId}, ${role}, ${grantedBy})
    on conflict do nothing`);
  return result.rowCount > 0;
}

/** Takes a granted role back (a role from a group stays while the group maps to it). */
export async function revokeRole(db: DatabasePool, orgId: string, personId: string, role: Role): Promise<boolean> {
  const result = await db.query(sql.unsafe`delete from relay_role_grants where org_id = ${orgId} and person_id = ${personId} and role = ${role}`);
  return result.rowCount > 0;
}

export interface GroupRole {
  orgId: string;
  provider: string;
  group: string;
  role: Role;
}

/** Rewrites the config-sourced group mapping (at start); admin-made rows stay. */
export async function syncConfigGroupRoles(db: DatabasePool, mapping: readonly GroupRole[]): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query(sql.unsafe`delete from relay_group_roles where source = 'config'`);
    for (const m of mapping) {
      await tx.query(sql.unsafe`
        insert into relay_group_roles (org_id, provider, group_name, role, source) values (${m.orgId}, ${m.provider}, ${m.group}, ${m.role}, 'config')
        on conflict (org_id, provider, group_name, role) do update set source = 'config'`);
    }
  });
}
