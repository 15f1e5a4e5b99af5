// What the agent-token commands share: the orchestrator database (--database-url or
// SVC_DATABASE_URL, migrated if fresh) and the `--ttl` duration syntax.
import { Flags } from '@oclif/core';
import { pino } from 'pino';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/database.ts';
import { loadConfig } from '../../../kernel/services/config/index.ts';
import { createDatabase, migrate, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { InputError } from '../../../core/errors.ts';
import type { SvcConfig } from '../../../schemas/config.ts';

export const databaseFlag = {
  'database-url': Flags.string({ description: 'orchestrator database (default: SVC_DATABASE_URL)' }),
};

const quiet = pino({ level: process.env['SVC_LOG_LEVEL'] ?? 'silent' });

export async function adminConfig(): Promise<SvcConfig> {
  return (await loadConfig({ env: process.env, cwd: process.cwd() })).config;
}

export async function withAgentDatabase<T>(config: SvcConfig, flag: string | undefined, fn: (pool: DatabasePool) => Promise<T>): Promise<T> {
  const url = flag ?? config.database.url;
  if (!url) throw new InputError(USAGE_ERROR_CODE, 'this command needs the orchestrator database: pass --database-url or set SVC_DATABASE_URL');
  const pool = await createDatabase({ url, logger: quiet, maxPoolSize: 2, applicationName: 'svc-admin' });
  try {
    await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: quiet });
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90d`, `12h`, `30m`, `45s`, `500ms` → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  const value = match ? Number(match[1]) * (UNITS[match[2] as string] as number) : Number.NaN;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new InputError(USAGE_ERROR_CODE, `--ttl "${text}" is not a duration: use a whole number with ms, s, m, h or d (e.g. 90d)`);
  }
  return value;
}
