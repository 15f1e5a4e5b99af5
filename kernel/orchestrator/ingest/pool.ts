// The ingest path's own small pool, so a webhook never waits for a connection behind the other
// subsystems' work on the shared one. Like every pool (kernel/services/db/pool.ts) it skips
// slonik's `DISCARD ALL` reset: ingest queries never change session state (no SET, LISTEN,
// temporary tables, named prepared statements or session advisory locks; timeouts are startup
// options). Everything else is as `createDatabase`: row validation, statement and connection
// timeouts.
import type { Logger } from 'pino';
import { createPool } from 'slonik';
import { checkDatabaseUrl, rowValidationInterceptor, sql, type DatabasePool } from '../../services/db/index.ts';
import { unavailableError } from '../../services/db/errors.ts';

export interface IngestPoolOptions {
  url: string;
  logger: Logger;
  /** Default 10. */
  maxPoolSize?: number;
}

export async function createIngestPool(options: IngestPoolOptions): Promise<DatabasePool> {
  const url = checkDatabaseUrl(options.url);
  if (!url.searchParams.has('application_name')) url.searchParams.set('application_name', 'svc-orchestrator-ingest');
  let pool: DatabasePool;
  try {
    pool = await createPool(url.toString(), {
      interceptors: [rowValidationInterceptor()],
      maxPoolSize: options.maxPoolSize ?? 10,
      statementTimeout: 60_000,
      connectionTimeout: 5_000,
      resetConnection: async () => undefined,
    });
    await pool.query(sql.unsafe`select 1`);
  } catch (cause) {
    throw unavailableError(options.url, cause);
  }
  pool.on('error', (error) => options.logger.warn({ err: error }, 'ingest database connection error'));
  return pool;
}
