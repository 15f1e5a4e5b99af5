// The orchestrator's side of the relay protocol.
export { connectRelay, ackForError, CONNECT_PATH, MAX_RELAY_FRAME_BYTES, type ConnectRelayOptions, type RelayLink, type RelayDeliveryResult } from './connect.ts';
export { relayLinkSubsystem, SOURCE_SYNC_MS } from './subsystem.ts';
