// What the source and runs commands share: the effective config (environment layered as the
// orchestrator reads it), the orchestrator database (--database-url or SVC_DATABASE_URL, with its
// migrations applied), and the master key the orchestrator seals source secrets with.
import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { pino } from 'pino';
import type { SvcConfig } from '../../../schemas/config.ts';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/database.ts';
import { dataDirMasterKey } from '../../../kernel/orchestrator/master-key-file.ts';
import { loadConfig } from '../../../kernel/services/config/index.ts';
import { loadMasterKeys } from '../../../kernel/services/crypto/master-keys.ts';
import { createDatabase, migrate, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { InputError } from '../../../core/errors.ts';

export const databaseFlag = {
  'database-url': Flags.string({ description: 'orchestrator database (default: SVC_DATABASE_URL)' }),
};

const quiet = pino({ level: 'silent' });

export async function adminConfig(): Promise<SvcConfig> {
  return (await loadConfig({ env: process.env, cwd: process.cwd() })).config;
}

export function databaseUrl(config: SvcConfig, flag: string | undefined): string {
  const url = flag ?? config.database.url;
  if (!url) throw new InputError(USAGE_ERROR_CODE, 'this command needs the orchestrator database: pass --database-url or set SVC_DATABASE_URL');
  if (!/^postgres(ql)?:\/\/\S+$/.test(url)) throw new InputError(USAGE_ERROR_CODE, '--database-url must be a postgres:// URL');
  return url;
}

export async function withDatabase<T>(url: string, fn: (pool: DatabasePool) => Promise<T>): Promise<T> {
  const pool = await createDatabase({ url, logger: quiet, maxPoolSize: 2 });
  try {
    await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: quiet });
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

/** SVC_SECRET_KEY (or its file), else the data directory's key, as the orchestrator uses. */
export async function masterKey(config: SvcConfig): Promise<Buffer> {
  const keys = await loadMasterKeys(config.secrets);
  return keys.current ?? (await dataDirMasterKey(resolve(process.cwd(), config.dataDir), quiet));
}

/** Where webhooks go: --url, the relay (platform.url), else the orchestrator itself (independent mode). */
export function ingestBaseUrl(config: SvcConfig, flag: string | undefined): string {
  if (flag) return flag;
  if (config.platform.url) return config.platform.url;
  if (config.server.publicUrl) return config.server.publicUrl;
  const port = config.server.port === 0 ? 7700 : config.server.port;
  return `http://127.0.0.1:${port}${(config.server.basePath ?? '').replace(/\/$/, '')}`;
}
