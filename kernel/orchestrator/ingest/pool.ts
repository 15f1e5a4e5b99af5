// The ingest path's own small pool. slonik resets every connection with `DISCARD ALL` when it
// goes back to the pool: one more round trip per checkout. The profile of the webhook bench put
// that reset at ~5% of the orchestrator's CPU (a socket write that wakes a backend on a busy
// machine is not cheap). Ingest queries never change session state (no SET, LISTEN, temporary
// tables, named prepared statements or session advisory locks; timeouts are startup options),
// so this pool skips the reset. Everything else is as `createDatabase`: row validation,
// statement and connection timeouts.
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
