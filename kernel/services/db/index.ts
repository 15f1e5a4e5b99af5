// The database service: one import for every database feature.
export { DatabaseRowError, checkDatabaseUrl, isUniqueViolation, redactUrl, unavailableError } from './errors.ts';
export { startEmbeddedPostgres, type EmbeddedPostgresOptions, type EmbeddedPostgresServer } from './embedded.ts';
export {
  createDatabase,
  describeQuery,
  ensureDatabaseExists,
  resolveDatabase,
  rowValidationInterceptor,
  sql,
  sqlTyped,
  typed,
  type DatabaseOptions,
  type DatabasePool,
  type ResolveDatabaseOptions,
  type ResolvedDatabase,
  type RowSchema,
} from './pool.ts';
export { NAMED_STATEMENTS_MAX, namedStatementsInterceptor, PLAN_EACH_EXECUTION, type NamedStatements } from './named-statements.ts';
export { migrate, migrationLockKey, readMigrations, type MigrateOptions, type MigrateResult, type Migration } from './migrate.ts';
export {
  MAX_NOTIFY_PAYLOAD_BYTES,
  checkChannel,
  collectWakeups,
  createListener,
  LOCAL_WAKE_PREFIX,
  notify,
  wakeLocalListeners,
  type GapHandler,
  type Listener,
  type ListenerOptions,
  type NotificationHandler,
} from './listen.ts';
export { FEED_SETTLE_MS, REPORT_SETTLE_MS, settledWake, WAKEUP_LINGER_MS, WakeupSender, type WakeupSenderOptions } from './wakeups.ts';
