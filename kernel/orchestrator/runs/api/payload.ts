// The original webhook body of a run (spec "Dashboard actions": payload), read from the event log
// object `event-log/<org_id>/<delivery_id>.json.gz` its delivery record points at. A re-run
// answers with its original run's payload. An omitted payload (too large, storage failed) is a
// 404 that says why.
import { gunzipSync } from 'node:zlib';
import { Type, type Static } from 'typebox';
import type { StorageExtensionPoint } from '../../../../core/extension-points/storage.ts';
import { sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { NotFoundError, UnavailableError, messageOf } from '../../../../core/errors.ts';
import { findRun } from './show.ts';

/** Gunzipped payloads larger than this are not relayed (the relay frame limit is 4 MiB). */
export const MAX_RELAYED_PAYLOAD_BYTES = 3 * 1024 * 1024;

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const DeliveryRow = Type.Object({
  delivery_id: Type.String(),
  payload_key: Nullable(Type.String()),
  payload_omitted: Type.Boolean(),
  payload_omitted_reason: Nullable(Type.String()),
});

async function readAll(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > limit) throw new Error(`stored object is larger than ${limit} bytes`);
    parts.push(buf);
  }
  return Buffer.concat(parts);
}

export async function readRunPayload(pool: DatabasePool, storage: StorageExtensionPoint | undefined, orgId: string, runId: string): Promise<{ payload: unknown }> {
  const run = await findRun(pool, orgId, runId);
  const deliveryKey = run.delivery_id;
  if (deliveryKey === null) throw new NotFoundError('SVC_ERR_RUNS_PAYLOAD_NONE', `run ${run.id} was not started by a webhook; it has no payload`);
  // A generic fan-out target's key is `<delivery_id>:<registration_id>`: its record is the delivery's.
  const record = await pool.maybeOne(sqlTyped(DeliveryRow)`
    select delivery_id, payload_key, payload_omitted, payload_omitted_reason from webhook_deliveries
    where org_id = ${run.org_id} and (delivery_id = ${deliveryKey} or starts_with(${deliveryKey}, delivery_id || ':'))
    order by (delivery_id = ${deliveryKey}) desc limit 1`);
  if (record === null) throw new NotFoundError('SVC_ERR_RUNS_PAYLOAD_NONE', `no delivery record for run ${run.id} (delivery ${deliveryKey})`);
  return payloadOf(storage, record);
}

/** The stored body of one delivery record of the org (the dashboard's event log). */
export async function readDeliveryPayload(pool: DatabasePool, storage: StorageExtensionPoint | undefined, orgId: string, deliveryId: string): Promise<{ payload: unknown }> {
  const record = await pool.maybeOne(sqlTyped(DeliveryRow)`
    select delivery_id, payload_key, payload_omitted, payload_omitted_reason from webhook_deliveries
    where org_id = ${orgId} and delivery_id = ${deliveryId}`);
  if (record === null) throw new NotFoundError('SVC_ERR_RUNS_PAYLOAD_NONE', `no delivery ${deliveryId} in the event log of org ${orgId}`);
  return payloadOf(storage, record);
}

async function payloadOf(storage: StorageExtensionPoint | undefined, record: Static<typeof DeliveryRow>): Promise<{ payload: unknown }> {
  if (record.payload_omitted || record.payload_key === null) {
    // Written after the ack (ingest/record/event-log.ts): until the confirmation batch flips it,
    // a record keeps its key and says storage_failed. The object may well be there already (a
    // burst's backlog takes seconds to confirm): serve it rather than report a failure.
    const pending = record.payload_key !== null && record.payload_omitted_reason === 'storage_failed' && storage !== undefined;
    if (pending) {
      const found = await readStored(storage, record, true);
      if (found !== null) return found;
    }
    const why =
      record.payload_omitted_reason === 'size_exceeded'
        ? 'it was larger than eventLog.maxPayloadBytes'
        : pending
          ? 'it is not in storage: storage failed when it arrived, or its write is still pending (try again in a few seconds)'
          : record.payload_omitted_reason === 'storage_failed'
            ? 'storage failed when it arrived'
            : 'it was not stored';
    throw new NotFoundError('SVC_ERR_RUNS_PAYLOAD_OMITTED', `the payload of delivery ${record.delivery_id} was not kept: ${why}`, { details: { reason: record.payload_omitted_reason } });
  }
  if (storage === undefined) throw new UnavailableError('SVC_ERR_RUNS_PAYLOAD_NO_STORAGE', 'this orchestrator has no storage configured; the payload cannot be read');
  return (await readStored(storage, record, false))!;
}

/** The stored object of `record`, parsed; null when it is absent and `absentIsNull`. */
async function readStored(storage: StorageExtensionPoint, record: Static<typeof DeliveryRow>, absentIsNull: boolean): Promise<{ payload: unknown } | null> {
  let body: Buffer;
  try {
    const gz = await readAll(await storage.get(record.payload_key!), MAX_RELAYED_PAYLOAD_BYTES);
    body = gunzipSync(gz, { maxOutputLength: MAX_RELAYED_PAYLOAD_BYTES });
  } catch (error) {
    if (error instanceof NotFoundError) {
      if (absentIsNull) return null;
      throw new NotFoundError('SVC_ERR_RUNS_PAYLOAD_MISSING', `the payload object ${record.payload_key} is missing from storage`);
    }
    throw new UnavailableError('SVC_ERR_RUNS_PAYLOAD_UNREADABLE', `the payload of delivery ${record.delivery_id} could not be read: ${messageOf(error)}`);
  }
  try {
    return { payload: JSON.parse(body.toString('utf8')) as unknown };
  } catch {
    // Generic sources may send bodies that are not JSON: hand back the text.
    return { payload: body.toString('utf8') };
  }
}
