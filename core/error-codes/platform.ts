// Shared platform: internal errors, HTTP, wire protocol, configuration, crypto, database.
// One entry per code: its kind (core/errors.ts) and a message template ({name} placeholders)
// describing the condition. How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCatalogue } from './catalogue.ts';

export const PLATFORM_ERROR_CODES = {
  // INTERNAL
  SVC_ERR_INTERNAL: { kind: 'internal', message: 'internal error (request {requestId})' },
  // HTTP
  SVC_ERR_HTTP_BAD_REQUEST: { kind: 'input', message: 'bad request: {reason}' },
  SVC_ERR_HTTP_BODY_TOO_LARGE: { kind: 'input', message: 'request body of {bytes} bytes is larger than the limit of {limit} bytes' },
  SVC_ERR_HTTP_HEADERS_TOO_LARGE: { kind: 'input', message: 'request headers are larger than the server accepts ({limit} in all); send large values in the body' },
  SVC_ERR_HTTP_INVALID_BODY: { kind: 'input', message: 'request body does not match its schema: {issues}' },
  SVC_ERR_HTTP_INVALID_HEADERS: { kind: 'input', message: 'headers do not match their schema: {issues}' },
  SVC_ERR_HTTP_INVALID_PARAMS: { kind: 'input', message: 'path parameters do not match their schema: {issues}' },
  SVC_ERR_HTTP_INVALID_QUERY: { kind: 'input', message: 'query string does not match its schema: {issues}' },
  SVC_ERR_HTTP_LISTEN_FAILED: { kind: 'unavailable', message: 'port {port} on {host} {why}' },
  SVC_ERR_HTTP_MALFORMED_JSON: { kind: 'input', message: 'request body is not valid JSON: {reason}' },
  SVC_ERR_HTTP_METHOD_NOT_ALLOWED: { kind: 'input', message: 'method {method} is not allowed for {path}' },
  SVC_ERR_HTTP_NOT_FOUND: { kind: 'not_found', message: 'no route or WebSocket endpoint for {method} {path}' },
  SVC_ERR_HTTP_REQUEST_TIMEOUT: { kind: 'input', message: "the request did not arrive in full within the server's request timeout" },
  SVC_ERR_HTTP_UNSUPPORTED_MEDIA_TYPE: { kind: 'input', message: 'unsupported content type' },
  // PROTOCOL
  SVC_ERR_PROTOCOL_ALREADY_REGISTERED: { kind: 'conflict', message: 'this connection is already registered' },
  SVC_ERR_PROTOCOL_FRAME: { kind: 'input', message: 'frames must be JSON text' },
  SVC_ERR_PROTOCOL_INVALID: { kind: 'input', message: 'the message does not match the protocol: {issues}' },
  SVC_ERR_PROTOCOL_JSON: { kind: 'input', message: 'frame is not valid JSON' },
  SVC_ERR_PROTOCOL_NOT_REGISTERED: { kind: 'input', message: 'the first message must be agent.register' },
  // CONFIG
  SVC_ERR_CONFIG_OTEL: { kind: 'input', message: '{name}={value}: {reason}' },
  SVC_ERR_CONFIG_FILE_UNREADABLE: { kind: 'input', message: 'config file {file} (named by SVC_CONFIG_FILE) {why}' },
  SVC_ERR_CONFIG_INVALID: { kind: 'input', message: 'config {path}: {reason}' },
  SVC_ERR_CONFIG_UNSUPPORTED: { kind: 'input', message: 'config {path}: {reason} (not supported in this version)' },
  // CRYPTO
  SVC_ERR_CRYPTO_KEY_FILE_UNREADABLE: { kind: 'input', message: '{fileName} {file} could not be read: {reason}' },
  SVC_ERR_CRYPTO_KEY_INVALID: { kind: 'input', message: 'a master key must be exactly {keyBytes} bytes' },
  SVC_ERR_CRYPTO_OPEN_FAILED: { kind: 'internal', message: 'sealed value for {additionalData} cannot be opened: {reason}' },
  // DB
  SVC_ERR_DB_ASYNC_SCHEMA: { kind: 'internal', message: 'query "{query}" uses an asynchronous schema; row schemas must validate synchronously' },
  SVC_ERR_DB_CHANNEL_INVALID: { kind: 'input', message: 'a notification channel must be a non-empty string of at most 63 bytes' },
  SVC_ERR_DB_EMBEDDED_DATA_DIR: { kind: 'internal', message: 'embedded PostgreSQL needs a data directory (SVC_DATA_DIR)' },
  SVC_ERR_DB_EMBEDDED_INIT: { kind: 'internal', message: 'initialising embedded PostgreSQL in {pgDataDir} failed: {reason}{tailText}' },
  SVC_ERR_DB_EMBEDDED_IN_USE: { kind: 'conflict', message: 'another PostgreSQL server (pid {pid}) is already running on {pgDataDir}' },
  SVC_ERR_DB_EMBEDDED_MISSING: {
    kind: 'unavailable',
    message: 'embedded PostgreSQL binaries for {platform}-{arch} ({binaries}) are not installed: {reason}',
  },
  SVC_ERR_DB_EMBEDDED_PORT: { kind: 'internal', message: 'embedded PostgreSQL port must be an integer 1-65535 (got {port})' },
  SVC_ERR_DB_EMBEDDED_PORT_IN_USE: {
    kind: 'unavailable',
    message: 'port {port} on 127.0.0.1 is already in use; choose another port for embedded PostgreSQL or stop what is listening there',
  },
  SVC_ERR_DB_EMBEDDED_SETTING: { kind: 'internal', message: 'embedded PostgreSQL setting "{name}" is not a valid name=value pair' },
  SVC_ERR_DB_EMBEDDED_START: { kind: 'unavailable', message: 'embedded PostgreSQL in {pgDataDir} did not start: {reason}{tailText}' },
  SVC_ERR_DB_EMBEDDED_STATE: {
    kind: 'internal',
    message: 'embedded PostgreSQL data exists in {pgDataDir} but its credentials file {statePath} is missing',
  },
  SVC_ERR_DB_LISTENER_CLOSED: { kind: 'input', message: 'this listener is closed' },
  SVC_ERR_DB_LISTENER_HANDLER: { kind: 'input', message: 'listen needs a handler function' },
  SVC_ERR_DB_MIGRATION_CHANGED: { kind: 'conflict', message: 'migration(s) {changed} in {dir} changed after being applied to this database' },
  SVC_ERR_DB_MIGRATION_DIR: { kind: 'input', message: 'cannot read the migrations directory {dir}: {reason}' },
  SVC_ERR_DB_MIGRATION_EMPTY: { kind: 'input', message: 'migration file {path} is empty' },
  SVC_ERR_DB_MIGRATION_FAILED: { kind: 'internal', message: 'migration {name} ({dir}) failed{where} and was rolled back: {reason}{code}' },
  SVC_ERR_DB_MIGRATION_LOCK_TIMEOUT: {
    kind: 'unavailable',
    message: 'gave up after {lockTimeoutMs} ms waiting for another process to finish migrating ({table}); check for a stuck process holding the migration lock',
  },
  SVC_ERR_DB_MIGRATION_NAME: {
    kind: 'input',
    message: 'migration file {path} is misnamed: expected NNNN_name.sql (four digits, lowercase letters, digits, _ or -)',
  },
  SVC_ERR_DB_MIGRATION_TABLE: { kind: 'input', message: 'migrations table "{table}" must be name or schema.name in lowercase letters, digits and _' },
  SVC_ERR_DB_NAME_INVALID: { kind: 'input', message: 'database name "{name}" must match {source}' },
  SVC_ERR_DB_NOTIFY_PAYLOAD: { kind: 'input', message: 'a notification payload must be a string or a JSON-serialisable object' },
  SVC_ERR_DB_ROW_INVALID: { kind: 'internal', message: 'a row returned by query "{query}" does not match its schema: {issues}' },
  SVC_ERR_DB_UNAVAILABLE: { kind: 'unavailable', message: 'cannot connect to PostgreSQL at {url}: {reason}' },
  SVC_ERR_DB_URL_INVALID: { kind: 'input', message: 'the database URL is not a valid URL (expected postgres://user:password@host:port/database)' },
  // MASTER
  SVC_ERR_MASTER_KEY_MISMATCH: {
    kind: 'internal',
    message: 'store {store}: {row} opens with none of the configured master keys: restore the previous master key as SVC_SECRET_KEY_OLD, restart, then run svc-admin rotate-key',
  },
} as const satisfies ErrorCatalogue;
