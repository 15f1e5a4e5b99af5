// Internal events. Public API (other subsystems):
//   emitInternalEvent(tx, input)      store an event + NOTIFY in the caller's transaction → { id }
//   checkEvent(input)                 the validation emitInternalEvent applies (throws InputError)
//   INTERNAL_EVENTS_CHANNEL           NOTIFY channel; payload `{ id, name, orgId }`
//   eventsSubsystem                   answers `event.emit` (start after dispatch)
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
export { answerEventEmit, eventsSubsystem } from './subsystem.ts';
