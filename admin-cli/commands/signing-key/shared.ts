// What the signing-key commands share: the orchestrator's settings from the environment, the
// database (--database-url or SVC_DATABASE_URL), the master key, and a db custody bound to the
// key table. Private key material never leaves the custody plugin.
import { resolve } from 'node:path';
import { Flags } from '@oclif/core';
import { pino, type Logger } from 'pino';
import type { SvcConfig } from '../../../schemas/config.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/database.ts';
import { createKeyVault } from '../../../kernel/orchestrator/identity/key-store.ts';
import { dataDirMasterKey } from '../../../kernel/orchestrator/master-key-file.ts';
import { loadConfig } from '../../../kernel/services/config/index.ts';
import { loadMasterKeys, type MasterKeys } from '../../../kernel/services/crypto/master-keys.ts';
import { createDatabase, migrate, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { InputError } from '../../../core/errors.ts';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { DbCustody } from '../../../plugins/custody/db/index.ts';

export const databaseFlag = {
  'database-url': Flags.string({ description: 'orchestrator database (default: SVC_DATABASE_URL)' }),
};

export const quietLogger: Logger = pino({ level: process.env['SVC_LOG_LEVEL'] ?? 'silent' });

export async function adminConfig(): Promise<SvcConfig> {
  return (await loadConfig({ env: process.env, cwd: process.cwd() })).config;
}

export function databaseUrlOf(config: SvcConfig, flag: string | undefined): string | undefined {
  return flag ?? config.database.url;
}

export async function withDatabase<T>(url: string | undefined, fn: (pool: DatabasePool) => Promise<T>): Promise<T> {
  if (!url) {
    throw new InputError(USAGE_ERROR_CODE, 'this command needs the orchestrator database: pass --database-url or set SVC_DATABASE_URL');
  }
  const pool = await createDatabase({ url, logger: quietLogger, maxPoolSize: 2, applicationName: 'svc-admin' });
  try {
    // The table may not exist yet on a fresh database: migrations are idempotent and locked.
    await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: quietLogger });
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

export async function adminMasterKeys(config: SvcConfig): Promise<MasterKeys> {
  const keys = await loadMasterKeys(config.secrets);
  if (keys.current) return keys;
  const key = await dataDirMasterKey(resolve(process.cwd(), config.dataDir), quietLogger);
  return { current: key, all: [{ name: 'current', key }] };
}

export function dbCustodyFor(config: SvcConfig, pool: DatabasePool, keys: MasterKeys): DbCustody {
  if (config.orchestrator.signerKind !== 'db') {
    throw new InputError(
      USAGE_ERROR_CODE,
      `signing keys are generated and rotated here only for db custody; SVC_ORCHESTRATOR_SIGNER_KIND is ${config.orchestrator.signerKind}: rotate the key in its own system`,
    );
  }
  const custody = new DbCustody({ activeCacheMs: 0 });
  custody.bind(createKeyVault(pool, keys, 'db'));
  return custody;
}
