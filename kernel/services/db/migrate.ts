// Schema migrations: plain `NNNN_name.sql` files applied in order, each once, each in its own
// transaction, recorded with a checksum. The whole run holds a PostgreSQL advisory lock on one
// dedicated connection, so processes starting together migrate once and the rest wait.
// Each program (orchestrator, relay) has its own directory, table and lock key, so they can
// share one database.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import type { DatabasePool } from 'slonik';
import { ConflictError, InputError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';
import { checkDatabaseUrl, unavailableError } from './errors.ts';

export interface Migration {
  /** File name, e.g. `0001_init.sql`; also the key in the migrations table. */
  name: string;
  version: number;
  checksum: string;
  sql: string;
}

export interface MigrateOptions {
  /** Directory of `NNNN_name.sql` files. */
  dir: string;
  /** Migrations table, `name` or `schema.name` (default `svc_migrations`). */
  table?: string;
  /** Advisory lock key (default: derived from the table name). */
  lockKey?: bigint;
  /** How long to wait for another process's run before giving up (default 10 min). */
  lockTimeoutMs?: number;
  logger: Logger;
}

export interface MigrateResult {
  /** Files applied by this run, in order. */
  applied: string[];
  /** Files found already applied. */
  alreadyApplied: string[];
}

const FILE_NAME = /^(\d{4})_([a-z0-9][a-z0-9_-]*)\.sql$/;
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** Reads and checks a migration directory; nothing touches the database. */
export async function readMigrations(dir: string): Promise<Migration[]> {
  let entries: string[];
  try {
    entries = await fs.readdir(dir);
  } catch (cause) {
    throw new InputError('SVC_ERR_DB_MIGRATION_DIR', `cannot read the migrations directory ${dir}: ${messageOf(cause)}`, { cause });
  }
  const byVersion = new Map<number, string>();
  const migrations: Migration[] = [];
  for (const name of entries.filter((e) => e.endsWith('.sql')).sort()) {
    const match = FILE_NAME.exec(name);
    if (match === null) {
      throw new InputError(
        'SVC_ERR_DB_MIGRATION_NAME',
        `migration file ${path.join(dir, name)} is misnamed: expected NNNN_name.sql (four digits, lowercase letters, digits, _ or -)`,
      );
    }
    const version = Number(match[1]);
    const clash = byVersion.get(version);
    if (clash !== undefined) {
      throw new InputError('SVC_ERR_DB_MIGRATION_NAME', `migrations ${clash} and ${name} in ${dir} have the same number ${match[1]}`);
    }
    byVersion.set(version, name);
    const sql = await fs.readFile(path.join(dir, name), 'utf8');
    if (sql.trim() === '') {
      throw new InputError('SVC_ERR_DB_MIGRATION_EMPTY', `migration file ${path.join(dir, name)} is empty`);
    }
    migrations.push({ name, version, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return migrations.sort((a, b) => a.version - b.version);
}

/** The advisory lock key of a migrations table: stable, and distinct per table. */
export function migrationLockKey(table: string): bigint {
  return createHash('sha256').update(`svc-migrations:${table}`).digest().readBigInt64BE(0);
}

function quoteTable(table: string): string {
  const parts = table.split('.');
  if (parts.length > 2 || parts.some((p) => !IDENTIFIER.test(p))) {
    throw new InputError('SVC_ERR_DB_MIGRATION_TABLE', `migrations table "${table}" must be name or schema.name in lowercase letters, digits and _`);
  }
  return parts.map((p) => `"${p}"`).join('.');
}

/** Applies pending migrations. Refuses to start when an applied file has changed. */
export async function migrate(target: DatabasePool | string, options: MigrateOptions): Promise<MigrateResult> {
  const table = options.table ?? 'svc_migrations';
  const quoted = quoteTable(table);
  const lockKey = options.lockKey ?? migrationLockKey(table);
  const lockTimeoutMs = options.lockTimeoutMs ?? 600_000;
  const logger = options.logger.child({ component: 'migrate', table });
  const migrations = await readMigrations(options.dir);

  const url = typeof target === 'string' ? target : target.configuration.connectionUri;
  checkDatabaseUrl(url);
  const ssl = typeof target === 'string' ? undefined : target.configuration.ssl;
  // A dedicated session: the advisory lock belongs to it, and multi-statement files run as-is.
  const client = new pg.Client({
    connectionString: url,
    ...(ssl === undefined ? {} : { ssl }),
    connectionTimeoutMillis: 10_000,
    application_name: 'svc-migrate',
  });
  client.on('error', (error) => logger.warn({ err: error }, 'migration connection error'));
  try {
    await client.connect();
  } catch (cause) {
    throw unavailableError(url, cause);
  }

  let locked = false;
  try {
    const key = lockKey.toString();
    const tried = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1::bigint) as ok', [key]);
    if (tried.rows[0]?.ok !== true) {
      logger.info('another process is migrating this database; waiting for it to finish');
      await client.query(`set statement_timeout = ${Math.max(1, Math.floor(lockTimeoutMs))}`);
      try {
        await client.query('select pg_advisory_lock($1::bigint)', [key]);
      } catch (cause) {
        if ((cause as { code?: string }).code === '57014') {
          throw new UnavailableError(
            'SVC_ERR_DB_MIGRATION_LOCK_TIMEOUT',
            `gave up after ${lockTimeoutMs} ms waiting for another process to finish migrating (${table}); check for a stuck process holding the migration lock`,
            { cause },
          );
        }
        throw cause;
      }
    }
    locked = true;
    await client.query('set statement_timeout = 0');

    await client.query(
      `create table if not exists ${quoted} (
         name text primary key,
         checksum text not null,
         applied_at timestamptz not null default now()
       )`,
    );
    const appliedRows = await client.query<{ name: string; checksum: string }>(`select name, checksum from ${quoted}`);
    const applied = new Map(appliedRows.rows.map((r) => [r.name, r.checksum]));

    const changed = migrations.filter((m) => applied.has(m.name) && applied.get(m.name) !== m.checksum).map((m) => m.name);
    if (changed.length > 0) {
      throw new ConflictError(
        'SVC_ERR_DB_MIGRATION_CHANGED',
        `migration${changed.length > 1 ? 's' : ''} ${changed.join(', ')} in ${options.dir} changed after being applied to this database; ` +
          'restore the original file and put the change in a new migration',
        { details: { files: changed } },
      );
    }
    const known = new Set(migrations.map((m) => m.name));
    const unknown = [...applied.keys()].filter((name) => !known.has(name));
    if (unknown.length > 0) {
      logger.warn({ unknown }, 'the database has migrations this version does not know (a newer version ran here)');
    }

    const result: MigrateResult = { applied: [], alreadyApplied: migrations.filter((m) => applied.has(m.name)).map((m) => m.name) };
    for (const migration of migrations) {
      if (applied.has(migration.name)) continue;
      const startedAt = Date.now();
      await client.query('begin');
      try {
        await client.query(migration.sql);
        await client.query(`insert into ${quoted} (name, checksum) values ($1, $2)`, [migration.name, migration.checksum]);
        await client.query('commit');
      } catch (cause) {
        await client.query('rollback').catch(() => undefined);
        throw failed(migration, options.dir, cause);
      }
      result.applied.push(migration.name);
      logger.info({ migration: migration.name, ms: Date.now() - startedAt }, 'migration applied');
    }
    if (result.applied.length === 0) logger.debug('database schema is up to date');
    return result;
  } finally {
    if (locked) await client.query('select pg_advisory_unlock($1::bigint)', [lockKey.toString()]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

function failed(migration: Migration, dir: string, cause: unknown): SvcError {
  const error = cause as { code?: string; position?: string; message?: string };
  let where = '';
  const position = Number(error.position);
  if (Number.isInteger(position) && position > 0) {
    where = ` at line ${migration.sql.slice(0, position - 1).split('\n').length}`;
  }
  const code = typeof error.code === 'string' ? ` (SQLSTATE ${error.code})` : '';
  return new SvcError(
    'SVC_ERR_DB_MIGRATION_FAILED',
    `migration ${migration.name} (${dir}) failed${where} and was rolled back: ${messageOf(cause)}${code}`,
    { cause, details: { file: migration.name, ...(error.code === undefined ? {} : { sqlState: error.code }) } },
  );
}
