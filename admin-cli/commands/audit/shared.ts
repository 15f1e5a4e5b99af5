// The audit record of a svc-admin change (docs/audit.md): svc-admin works on the database
// directly, so it records its own changes, as the OS user running it (`operator`), once each,
// whatever the outcome (kernel/orchestrator/audit/audited.ts).
import type { CommonQueryMethods } from 'slonik';
import { audited as auditedAs, errorDetail, outcomeOfError, valueOf, type AuditedChange } from '../../../kernel/orchestrator/audit/audited.ts';
import { operatorActor } from '../../../kernel/orchestrator/audit/store.ts';
import { recordRelayAudit } from '../../../kernel/relay/audit/record.ts';

/** A change in the orchestrator database, recorded in its trail. */
export function audited<T>(db: CommonQueryMethods, what: AuditedChange<T>, change: () => Promise<T>): Promise<T> {
  return auditedAs(db, operatorActor(), 'admin', what, change);
}

/** A change in the relay database: the record goes to the relay's outbox, then to the org's orchestrator. */
export async function auditedAtRelay<T>(
  db: CommonQueryMethods,
  what: AuditedChange<T> & { orgId: string | ((result: T) => string); person?: (result: T) => string },
  change: () => Promise<T>,
): Promise<T> {
  const actor = { kind: 'system' as const, id: 'svc-admin', name: operatorActor().name };
  let result: T;
  try {
    result = await change();
  } catch (error) {
    const orgId = valueOf(what.orgId, undefined, '');
    if (orgId !== '') await recordRelayAudit(db, { orgId, actor, action: what.action, target: valueOf(what.target, undefined, ''), outcome: outcomeOfError(error), detail: errorDetail(error) });
    throw error;
  }
  const person = what.person?.(result);
  await recordRelayAudit(db, { orgId: valueOf(what.orgId, result, ''), actor, action: what.action, target: valueOf(what.target, result, ''), outcome: 'ok', detail: what.detail?.(result) ?? '', ...(person === undefined ? {} : { person }) });
  return result;
}
