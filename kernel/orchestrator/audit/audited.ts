// Runs a change and records it once in the audit trail, whatever its outcome: `ok`, `refused`
// when the input or the state said no (input, not found, conflict, not allowed), `failed`
// otherwise. Used by svc-admin (actor: the OS user) and the admin API (actor: the admin token).
import type { CommonQueryMethods } from 'slonik';
import type { AuditActor } from '../../../schemas/http/audit.ts';
import { isSvcError } from '../../../core/errors.ts';
import type { AdminPrincipal } from '../admin-auth/require-scope.ts';
import { recordAudit } from './store.ts';

export interface AuditedChange<T> {
  action: string;
  target: string | ((result: T) => string);
  orgId?: string | ((result: T) => string);
  detail?: (result: T) => string;
}

const REFUSED_KINDS = new Set(['input', 'not_found', 'conflict', 'not_allowed']);

export function outcomeOfError(error: unknown): 'refused' | 'failed' {
  return isSvcError(error) && REFUSED_KINDS.has(error.kind) ? 'refused' : 'failed';
}

export function errorDetail(error: unknown): string {
  return isSvcError(error) ? `${error.code}: ${error.message}` : error instanceof Error ? error.message : String(error);
}

export const valueOf = <T>(v: string | ((r: T) => string) | undefined, result: T | undefined, fallback: string): string =>
  typeof v === 'function' ? (result === undefined ? fallback : v(result)) : (v ?? fallback);

/** Who called an admin route: the bootstrap token or a minted admin token. */
export function adminActor(principal: AdminPrincipal | undefined): AuditActor {
  if (principal === undefined || principal.kind === 'bootstrap') return { kind: 'admin-token', id: 'bootstrap', name: 'bootstrap admin token' };
  return { kind: 'admin-token', id: principal.id, name: principal.name };
}

export async function audited<T>(db: CommonQueryMethods, actor: AuditActor, via: string, what: AuditedChange<T>, change: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await change();
  } catch (error) {
    await recordAudit(db, { orgId: valueOf(what.orgId, undefined, ''), actor, action: what.action, target: valueOf(what.target, undefined, ''), outcome: outcomeOfError(error), detail: errorDetail(error), via });
    throw error;
  }
  await recordAudit(db, { orgId: valueOf(what.orgId, result, ''), actor, action: what.action, target: valueOf(what.target, result, ''), outcome: 'ok', detail: what.detail?.(result) ?? '', via });
  return result;
}
