// How the `relay` admin commands reach the relay's database: `--database-url`, else
// SVC_RELAY_DATABASE_URL. Migrations run first, so provisioning works before the relay ever started.
import { Flags } from '@oclif/core';
import { pino } from 'pino';
import { migrateRelay } from '../../../kernel/relay/index.ts';
import { createDatabase, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { InputError } from '../../../core/errors.ts';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';

export const databaseUrlFlag = {
  'database-url': Flags.string({ description: "the relay's PostgreSQL URL (default: SVC_RELAY_DATABASE_URL)" }),
};

export async function withRelayDatabase<T>(flagValue: string | undefined, work: (pool: DatabasePool) => Promise<T>): Promise<T> {
  const url = (flagValue ?? process.env['SVC_RELAY_DATABASE_URL'] ?? '').trim();
  if (url === '') {
    throw new InputError(USAGE_ERROR_CODE, "no relay database: pass --database-url or set SVC_RELAY_DATABASE_URL to the relay's PostgreSQL URL");
  }
  const logger = pino({ level: 'warn' }, pino.destination(2));
  const pool = await createDatabase({ url, logger, maxPoolSize: 2, applicationName: 'svc-admin' });
  try {
    await migrateRelay(pool, logger);
    return await work(pool);
  } finally {
    await pool.end().catch(() => undefined);
  }
}
