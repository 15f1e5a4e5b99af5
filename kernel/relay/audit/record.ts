// The relay's audit records (docs/audit.md). The trail lives in the orchestrator database; the
// relay writes what it alone sees (sign-in and sign-out, token creation and revocation, role
// grants, people disabled at a refresh) to an outbox in the same transaction as the change, and
// the forwarder (forward.ts) hands them to an orchestrator of the org, which stores each once (the
// id travels with it). A change to a person also queues their people-directory entry.
import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import { InputError } from '../../../core/errors.ts';
import { sql } from '../../services/db/index.ts';
import type { RelayActor } from '../../../schemas/wire/relay.ts';

export interface RelayAuditEntry {
  orgId: string;
  actor: RelayActor;
  /** `<area>.<verb>`: session.sign_in, session.sign_out, token.create, token.revoke, role.grant, role.revoke, person.disable. */
  action: string;
  /** What it acted on: `person:<id>`, `token:<id>`, `role:<role>`. */
  target?: string;
  outcome: 'ok' | 'refused' | 'failed';
  /** One sentence; for a refusal, the reason. */
  detail?: string;
  /** A person whose directory entry (teams, roles) this change may alter. */
  person?: string;
}

const ACTION = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/g;
const clean = (value: string, max: number): string => value.replace(CONTROL, ' ').slice(0, max);

/** Wakes the forwarder of this process after a write (set by forward.ts; a no-op before). */
let wake: () => void = () => {};
export function onAuditWritten(fn: () => void): void {
  wake = fn;
}

/** Writes one record to the outbox, inside the caller's transaction when `db` is one. */
export async function recordRelayAudit(db: CommonQueryMethods, entry: RelayAuditEntry): Promise<void> {
  if (!ACTION.test(entry.action) || entry.action.length > 100) throw new InputError('SVC_ERR_RELAY_AUDIT_INVALID', `audit action ${JSON.stringify(entry.action).slice(0, 120)} is not <area>.<verb>`);
  if (typeof entry.orgId !== 'string' || entry.orgId === '') throw new InputError('SVC_ERR_RELAY_AUDIT_INVALID', 'a relay audit record names its org (the trail is kept by the org\'s orchestrator)');
  if (entry.actor.name.trim() === '') throw new InputError('SVC_ERR_RELAY_AUDIT_INVALID', 'an audit record must name who acted');
  await db.query(sql.unsafe`
    insert into relay_audit_outbox (id, org_id, actor_kind, actor_id, actor_name, action, target, outcome, detail)
    values (${randomUUID()}, ${entry.orgId}, ${entry.actor.kind}, ${clean(entry.actor.id, 200)}, ${clean(entry.actor.name, 200)}, ${entry.action},
            ${clean(entry.target ?? '', 500)}, ${entry.outcome}, ${clean(entry.detail ?? '', 2000)})`);
  if (entry.person !== undefined && UUID.test(entry.person)) await queuePersonSync(db, entry.person);
  wake();
}

/** Queues a person's directory entry to be sent to the orchestrators again. */
export async function queuePersonSync(db: CommonQueryMethods, personId: string): Promise<void> {
  await db.query(sql.unsafe`insert into relay_people_sync_pending (person_id) values (${personId}) on conflict (person_id) do update set queued_at = now()`);
  wake();
}
