// Internal events (docs/events.md). Public API (other subsystems):
//   emitInternalEvent(tx, input, limits?)  store an event + NOTIFY in the caller's transaction → { id }
//   checkEvent(input)                      the validation emitInternalEvent applies (throws InputError)
//   emitJobComplete / emitWorkflowComplete completion events, in the transaction recording them
//   INTERNAL_EVENTS_CHANNEL                NOTIFY channel; payload `{ id, name, orgId }`
//   listDlq / countDlq / retryDlq / discardDlq   the dead-letter queue (svc-admin event-dlq)
//   eventsSubsystem                        answers `event.emit`, runs the delivery loop
export {
  INTERNAL_EVENTS_CHANNEL,
  MAX_EVENT_NAME_LENGTH,
  MAX_EVENT_PAYLOAD_BYTES,
  MAX_EVENT_TARGET_LENGTH,
  SYSTEM_EVENT_NAMES,
  checkEvent,
  emitInternalEvent,
  type InternalEventInput,
  type StoredEvent,
} from './emit.ts';
export { emitJobComplete, emitWorkflowComplete, completionStatusOf } from './completion.ts';
export { checkChainDepth, OrgEventRate, type EventLimits } from './breaker.ts';
export { listDlq, countDlq, retryDlq, discardDlq, type DlqEntry, type DlqFilter } from './dlq.ts';
export { answerEventEmit, eventsSubsystem } from './subsystem.ts';
