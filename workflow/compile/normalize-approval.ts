// Approval blocks (workflow, job and step level) → the one normalized lock form: principal lists
// sorted and de-duplicated, `count` and `when` written out.
import type { LockApproval, LockApprovalClause } from '../../schemas/lock.ts';
import { canonicalStringify } from '../lock/canonical-json.ts';
import { ORG_ROLES } from '../../schemas/org-roles.ts';
import { childPath, CompileErrorCode, type CompileScope } from './compile-scope.ts';
import { arrayOf, expectObject, optionalInteger, optionalString } from './validate-fields.ts';

const PRINCIPAL = /^[A-Za-z0-9][A-Za-z0-9_.@/-]{0,99}$/;
const WHEN = ['always', 'untrusted', 'fork'] as const;

function principals(scope: CompileScope, path: string, value: unknown): string[] {
  const items = arrayOf(scope, path, value, (item, itemPath) => {
    if (typeof item !== 'string' || !PRINCIPAL.test(item)) scope.fail(CompileErrorCode.invalidApproval, itemPath, `${JSON.stringify(item)} is not a valid user, team or role`);
    return item;
  });
  return [...new Set(items)].sort();
}

function clause(scope: CompileScope, path: string, value: unknown): LockApprovalClause {
  const c = expectObject(scope, path, value, ['users', 'teams', 'roles', 'count']);
  const users = principals(scope, childPath(path, 'users'), c['users']);
  const teams = principals(scope, childPath(path, 'teams'), c['teams']);
  const roles = principals(scope, childPath(path, 'roles'), c['roles']);
  for (const role of roles) {
    if (!(ORG_ROLES as readonly string[]).includes(role)) scope.fail(CompileErrorCode.invalidApproval, childPath(path, 'roles'), `${JSON.stringify(role)} is not a role; the roles are ${ORG_ROLES.join(', ')}`);
  }
  if (users.length + teams.length + roles.length === 0) scope.fail(CompileErrorCode.invalidApproval, path, 'names no users, teams or roles, so nobody could approve');
  const count = optionalInteger(scope, childPath(path, 'count'), c['count'], { min: 1, max: 100 }) ?? 1;
  if (teams.length === 0 && roles.length === 0 && count > users.length) {
    scope.fail(CompileErrorCode.invalidApproval, childPath(path, 'count'), `needs ${count} approvals but lists only ${users.length} user(s)`);
  }
  return { users, teams, roles, count };
}

export function normalizeApproval(scope: CompileScope, path: string, value: unknown): LockApproval | undefined {
  if (value === undefined) return undefined;
  const a = expectObject(scope, path, value, ['clauses', 'reason', 'timeoutSeconds', 'when']);
  const clauses = arrayOf(scope, childPath(path, 'clauses'), a['clauses'], (item, itemPath) => clause(scope, itemPath, item));
  if (clauses.length === 0) scope.fail(CompileErrorCode.invalidApproval, childPath(path, 'clauses'), 'needs at least one clause');
  const when = a['when'] ?? 'always';
  if (!(WHEN as readonly unknown[]).includes(when)) scope.fail(CompileErrorCode.invalidApproval, childPath(path, 'when'), `must be one of: ${WHEN.join(', ')}`);
  // Clauses are all required, so their order carries no meaning: sort them for a stable lock.
  clauses.sort((x, y) => (canonicalStringify(x) < canonicalStringify(y) ? -1 : 1));
  const out: LockApproval = { clauses, when: when as LockApproval['when'] };
  const reason = optionalString(scope, childPath(path, 'reason'), a['reason']);
  if (reason !== undefined && reason.trim() !== '') out.reason = reason;
  const timeoutSeconds = optionalInteger(scope, childPath(path, 'timeoutSeconds'), a['timeoutSeconds'], { min: 1, max: 30 * 86_400, unit: 'seconds' });
  if (timeoutSeconds !== undefined) out.timeoutSeconds = timeoutSeconds;
  return out;
}
