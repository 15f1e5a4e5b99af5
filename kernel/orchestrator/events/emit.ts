// Storing internal events. The insert and its NOTIFY run on the caller's transaction, so they
// commit together or not at all (spec "Internal events", delivery guarantee 1): a listener never
// hears of an event that is not there, and a rolled-back insert is never announced.
// Delivery to matching registrations (leases, retries, DLQ) reads the same table later.
import { randomUUID } from 'node:crypto';
import type { CommonQueryMethods } from 'slonik';
import { notify, sql } from '../../services/db/index.ts';
import { InputError } from '../../../core/errors.ts';
import { checkChainDepth, type EventLimits } from './breaker.ts';

/** Every stored event is announced here with `{ id, name, orgId }`; listeners read the row. */
export const INTERNAL_EVENTS_CHANNEL = 'svc_internal_events';
export const MAX_EVENT_NAME_LENGTH = 200;
/** Serialized JSON payload limit. */
export const MAX_EVENT_PAYLOAD_BYTES = 1024 * 1024;
export const MAX_EVENT_TARGET_LENGTH = 500;

/** The scaling subsystem's scale-up (spec "Internal events": carries `mandatoryLabels`). */
export const SCALE_UP_EVENT = 'svc.scaler.scale-up';

/** Names only the orchestrator (or the scheduler) emits; a step may not forge them. */
export const SYSTEM_EVENT_NAMES: ReadonlySet<string> = new Set(['workflow_complete', 'job_complete', 'registration.updated', '__schedule_fire', SCALE_UP_EVENT]);

export interface InternalEventInput {
  name: string;
  payload: unknown;
  orgId: string;
  /** Optional emitter-named target (a workflow or repository); null/undefined: any registration. */
  target?: string | null;
  /** `step` for `ctx.emit` (the default), `orchestrator` for system events. */
  source?: 'step' | 'orchestrator';
  runId?: string | null;
  jobId?: string | null;
  chainDepth?: number;
}

export interface StoredEvent {
  /** The event id; answered to the agent as `deliveryId`. */
  id: string;
}

// Custom names as the SDK accepts them (`deploy.done`, `ci:ready`); system names may also start
// with `_` (`__schedule_fire`).
const STEP_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const SYSTEM_NAME = /^[A-Za-z0-9_][A-Za-z0-9._:-]*$/;

/** The checked, serialized form of an event's parts; throws InputError naming the problem. */
export function checkEvent(input: InternalEventInput): { name: string; payloadJson: string; target: string | null } {
  const source = input.source ?? 'step';
  const name = input.name;
  if (typeof name !== 'string' || name.length === 0) throw new InputError('SVC_ERR_EVENT_NAME_INVALID', 'event name must not be empty');
  if (name.length > MAX_EVENT_NAME_LENGTH) {
    throw new InputError('SVC_ERR_EVENT_NAME_INVALID', `event name is ${name.length} characters; the limit is ${MAX_EVENT_NAME_LENGTH}`);
  }
  if (source === 'step' && (SYSTEM_EVENT_NAMES.has(name) || name.startsWith('__'))) {
    throw new InputError('SVC_ERR_EVENT_NAME_RESERVED', `event name "${name}" is reserved for events the orchestrator emits itself`);
  }
  if (!(source === 'step' ? STEP_NAME : SYSTEM_NAME).test(name)) {
    throw new InputError('SVC_ERR_EVENT_NAME_INVALID', `event name ${JSON.stringify(name.slice(0, 80))} must start with a letter or digit and hold only letters, digits and . _ : -`);
  }
  if (typeof input.orgId !== 'string' || input.orgId === '') throw new InputError('SVC_ERR_EVENT_ORG_INVALID', 'an internal event needs an org');
  let payloadJson: string | undefined;
  try {
    payloadJson = JSON.stringify(input.payload === undefined ? null : input.payload);
  } catch (error) {
    throw new InputError('SVC_ERR_EVENT_PAYLOAD_INVALID', 'event payload must be JSON-serializable (no cycles or BigInt)', { cause: error });
  }
  if (payloadJson === undefined) throw new InputError('SVC_ERR_EVENT_PAYLOAD_INVALID', 'event payload must be a JSON value');
  const bytes = Buffer.byteLength(payloadJson, 'utf8');
  if (bytes > MAX_EVENT_PAYLOAD_BYTES) {
    throw new InputError('SVC_ERR_EVENT_PAYLOAD_TOO_LARGE', `event payload is ${bytes} bytes as JSON; the limit is ${MAX_EVENT_PAYLOAD_BYTES} (store big data as an artifact and send a reference)`);
  }
  // PostgreSQL's jsonb cannot hold NUL characters.
  if (payloadJson.includes('\\u0000')) throw new InputError('SVC_ERR_EVENT_PAYLOAD_INVALID', 'event payload must not contain NUL (\\u0000) characters');
  const target = input.target ?? null;
  if (target !== null && (typeof target !== 'string' || target.length === 0 || target.length > MAX_EVENT_TARGET_LENGTH || /[\u0000-\u001f\u007f]/.test(target))) {
    throw new InputError('SVC_ERR_EVENT_TARGET_INVALID', `event target must be 1-${MAX_EVENT_TARGET_LENGTH} printable characters`);
  }
  return { name, payloadJson, target };
}

/**
 * Stores an internal event and NOTIFYs `svc_internal_events` on `tx`. Call it inside
 * `pool.transaction(...)` so the event and the notification commit (or roll back) together.
 */
export async function emitInternalEvent(tx: CommonQueryMethods, input: InternalEventInput, limits?: Pick<EventLimits, 'maxChainDepth'>): Promise<StoredEvent> {
  const checked = checkEvent(input);
  if (limits !== undefined) checkChainDepth(checked.name, Math.max(0, Math.trunc(input.chainDepth ?? 0)), limits);
  const id = randomUUID();
  await tx.query(sql.unsafe`
    INSERT INTO internal_events (id, name, payload, target, org_id, source, run_id, job_id, chain_depth)
    VALUES (${id}, ${checked.name}, ${checked.payloadJson}::jsonb, ${checked.target}, ${input.orgId}, ${input.source ?? 'step'},
            ${input.runId ?? null}, ${input.jobId ?? null}, ${Math.max(0, Math.trunc(input.chainDepth ?? 0))})`);
  await notify(tx, INTERNAL_EVENTS_CHANNEL, { id, name: checked.name, orgId: input.orgId });
  return { id };
}
