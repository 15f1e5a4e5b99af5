// The slonik pool every database feature uses, with an interceptor that validates each result
// row against the TypeBox schema its query declares (`sqlTyped(Row)` or `sql.type(typed(Row))`).
import pg from 'pg';
import type { Logger } from 'pino';
import { createPool, sql, type DatabasePool, type Interceptor, type QueryResultRow } from 'slonik';
import type { Static, TSchema } from 'typebox';
import { compileSchema, formatIssues, type SchemaCheck, type ValidationIssue } from '../../../schemas/validate.ts';
import { InputError, SvcError } from '../../../core/errors.ts';
import { startEmbeddedPostgres } from './embedded.ts';
import { DatabaseRowError, checkDatabaseUrl, redactUrl, unavailableError } from './errors.ts';
import { NAMED_STATEMENTS_MAX, namedStatementsInterceptor } from './named-statements.ts';
import { queryThroughCallbacks } from './pg-query-callbacks.ts';

export { sql };
export type { DatabasePool };

/** The Standard Schema v1 shape slonik's `sql.type()` accepts, produced from a TypeBox schema. */
export interface RowSchema<T> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => RowSchemaResult<T>;
    readonly types?: { readonly input: unknown; readonly output: T } | undefined;
  };
}
export type RowSchemaResult<T> =
  | { readonly value: T; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey> | undefined }> };

interface RowSchemaInfo {
  check: SchemaCheck<TSchema>;
  label: string | undefined;
}

// Adapters made by typed(); the interceptor finds the compiled check through them.
const adapters = new WeakMap<object, RowSchemaInfo>();
const compiled = new WeakMap<TSchema, SchemaCheck<TSchema>>();
const unlabelled = new WeakMap<TSchema, RowSchema<unknown>>();

/**
 * Adapts a TypeBox schema to the Standard Schema slonik wants. `label` names the query in
 * errors (default: the start of its SQL). Compiled once per schema.
 */
export function typed<S extends TSchema>(schema: S, label?: string): RowSchema<Static<S>> {
  if (label === undefined) {
    const cached = unlabelled.get(schema);
    if (cached !== undefined) return cached as RowSchema<Static<S>>;
  }
  let check = compiled.get(schema);
  if (check === undefined) {
    check = compileSchema(schema);
    compiled.set(schema, check);
  }
  const info: RowSchemaInfo = { check, label };
  const adapter: RowSchema<Static<S>> = {
    '~standard': {
      version: 1,
      vendor: 'svc-typebox',
      validate(value: unknown): RowSchemaResult<Static<S>> {
        const result = info.check.validate(value);
        if (result.ok) return { value: result.value as Static<S> };
        return { issues: result.issues.map((i) => ({ message: i.message, path: i.path === '' ? [] : i.path.split('.') })) };
      },
    },
  };
  adapters.set(adapter, info);
  if (label === undefined) unlabelled.set(schema, adapter as RowSchema<unknown>);
  return adapter;
}

/** `sqlTyped(Row)\`select ...\`` is `sql.type(typed(Row))\`select ...\``. */
export function sqlTyped<S extends TSchema>(schema: S, label?: string) {
  return sql.type(typed(schema, label));
}

/** One line naming a query for errors and logs: its label, or the start of its SQL. */
export function describeQuery(sqlText: string, label?: string): string {
  if (label !== undefined) return label;
  const flat = sqlText.replace(/\s+/g, ' ').trim();
  return flat.length > 120 ? `${flat.slice(0, 117)}...` : flat;
}

function rowError(query: string, issues: readonly ValidationIssue[]): DatabaseRowError {
  return new DatabaseRowError(
    'SVC_ERR_DB_ROW_INVALID',
    `a row returned by query "${query}" does not match its schema: ${formatIssues(issues)}`,
    { details: { query, issues } },
  );
}

/** Validates every row of a typed query; untyped queries (`sql.unsafe`) pass through. */
export function rowValidationInterceptor(): Interceptor {
  return {
    name: 'svc-row-validation',
    transformRow(context, query, row): QueryResultRow {
      const parser = context.resultParser;
      if (parser === undefined) return row;
      const ours = adapters.get(parser);
      if (ours !== undefined) {
        const result = ours.check.validate(row);
        if (result.ok) return row;
        throw rowError(describeQuery(context.originalQuery.sql, ours.label), result.issues);
      }
      // Any other Standard Schema (slonik's own `unknown` for sql.unsafe included).
      const result = parser['~standard'].validate(row);
      if (result instanceof Promise) {
        throw new SvcError(
          'SVC_ERR_DB_ASYNC_SCHEMA',
          `query "${describeQuery(query.sql)}" uses an asynchronous schema; row schemas must validate synchronously`,
        );
      }
      if (result.issues !== undefined) {
        const issues = result.issues.map((i) => ({
          path: (i.path ?? []).map((p) => String(typeof p === 'object' && p !== null ? p.key : p)).join('.'),
          message: i.message,
        }));
        throw rowError(describeQuery(query.sql), issues);
      }
      return result.value as QueryResultRow;
    },
  };
}

export interface DatabaseOptions {
  url: string;
  logger: Logger;
  /** Default 10. */
  maxPoolSize?: number;
  /** Per statement; default 60 s. */
  statementTimeoutMs?: number;
  /** Default 5 s. */
  connectionTimeoutMs?: number;
  /** Run `select 1` before returning so a bad URL fails at start-up (default true). */
  verify?: boolean;
  /** Extra slonik interceptors, run after row validation. */
  interceptors?: readonly Interceptor[];
  /** Shown in pg_stat_activity. */
  applicationName?: string;
  /**
   * Connections opened at start and kept however long they idle (default 0). A latency-bound
   * path sets it so a burst after a quiet spell does not wait for new backends to start.
   */
  minPoolSize?: number;
  /** How long a connection beyond `minPoolSize` may idle before it is closed; default 5 s. */
  idleTimeoutMs?: number;
  /**
   * Name each distinct statement after its text so each connection parses it once
   * (named-statements.ts; default false). `true` names every text at first use (a hot path with
   * a fixed set of statements); `'repeated'` only a text run a second time (a shared pool, whose
   * one-off statements should not take the names).
   */
  namedStatements?: boolean | 'repeated';
}

/**
 * A slonik pool with row validation. Types as slonik's defaults: int8 → bigint,
 * timestamptz/timestamp → epoch milliseconds (number), numeric → number, date → 'YYYY-MM-DD'.
 */
export async function createDatabase(options: DatabaseOptions): Promise<DatabasePool> {
  const parsed = checkDatabaseUrl(options.url);
  // Every pg client of the process (slonik's included) queries through pg's callback API from
  // here on: its promise API kept each query's objects alive into the old generation.
  queryThroughCallbacks();
  if (options.applicationName !== undefined && !parsed.searchParams.has('application_name')) {
    parsed.searchParams.set('application_name', options.applicationName);
  }
  const logger = options.logger.child({ component: 'db' });
  let pool: DatabasePool;
  try {
    pool = await createPool(parsed.toString(), {
      interceptors: [rowValidationInterceptor(), ...namedStatementsOf(options.namedStatements), ...(options.interceptors ?? [])],
      maxPoolSize: options.maxPoolSize ?? 10,
      minPoolSize: options.minPoolSize ?? 0,
      idleTimeout: options.idleTimeoutMs ?? 5_000,
      statementTimeout: options.statementTimeoutMs ?? 60_000,
      connectionTimeout: options.connectionTimeoutMs ?? 5_000,
      // No `DISCARD ALL` when a connection goes back to the pool. slonik's default reset is one
      // more round trip per checkout: a fifth of the orchestrator's statements under webhook
      // load (issue 19), each a socket write that wakes a backend. Pool users never leave
      // session state behind: no SET (only SET LOCAL / set_config(…, true)), no session advisory
      // locks, LISTEN, temporary tables or PREPARE; those run on dedicated clients (migrate.ts,
      // listen.ts, cluster/leader.ts). test/architecture/pool-session-state keeps it so.
      // Timeouts are connection startup options, not session SETs. The one state a connection
      // keeps is `namedStatements`', whose names follow from their texts (named-statements.ts).
      resetConnection: async () => undefined,
    });
  } catch (cause) {
    throw unavailableError(options.url, cause);
  }
  // An idle client dying (server restart, terminated backend) is reported here, not thrown.
  pool.on('error', (error) => logger.warn({ err: error }, 'database pool connection error'));
  if (options.verify !== false) {
    try {
      await pool.query(sql.unsafe`select 1`);
    } catch (cause) {
      await pool.end().catch(() => undefined);
      throw unavailableError(options.url, cause);
    }
  }
  logger.debug({ url: redactUrl(options.url) }, 'database pool ready');
  return pool;
}

function namedStatementsOf(option: DatabaseOptions['namedStatements']): Interceptor[] {
  if (option === undefined || option === false) return [];
  return [namedStatementsInterceptor(NAMED_STATEMENTS_MAX, option === 'repeated' ? 2 : 1)];
}

const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Creates database `name` on the server at `adminUrl` unless it exists (safe under races). */
export async function ensureDatabaseExists(adminUrl: string, name: string): Promise<void> {
  if (!DATABASE_NAME.test(name)) {
    throw new InputError('SVC_ERR_DB_NAME_INVALID', `database name "${name}" must match ${DATABASE_NAME.source}`);
  }
  checkDatabaseUrl(adminUrl);
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (cause) {
    throw unavailableError(adminUrl, cause);
  }
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount === 0) {
      try {
        await client.query(`create database ${client.escapeIdentifier(name)}`);
      } catch (error) {
        // Another process created it first.
        const code = (error as { code?: string }).code;
        if (code !== '42P04' && code !== '23505') throw error;
      }
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface ResolveDatabaseOptions {
  /** SVC_DATABASE_URL (or SVC_RELAY_DATABASE_URL); empty or absent → embedded PostgreSQL. */
  url?: string | undefined;
  /** SVC_DATA_DIR: where embedded PostgreSQL keeps its data. */
  dataDir: string;
  logger: Logger;
  /** Database created and used on the embedded server (default `svc`); ignored with a URL. */
  database?: string;
  /** Fixed port for the embedded server. */
  embeddedPort?: number;
  pool?: Omit<DatabaseOptions, 'url' | 'logger'>;
}

export interface ResolvedDatabase {
  readonly url: string;
  readonly pool: DatabasePool;
  /** True when this call's database lives in embedded PostgreSQL. */
  readonly embedded: boolean;
  /** Ends the pool and stops the embedded server this call started. Idempotent. */
  close(): Promise<void>;
}

/** The operator's database when a URL is given, otherwise embedded PostgreSQL under `dataDir`. */
export async function resolveDatabase(options: ResolveDatabaseOptions): Promise<ResolvedDatabase> {
  const given = options.url?.trim() ?? '';
  if (given !== '') {
    const pool = await createDatabase({ ...options.pool, url: given, logger: options.logger });
    let closing: Promise<void> | undefined;
    return {
      url: given,
      pool,
      embedded: false,
      close: () => (closing ??= pool.end()),
    };
  }
  const server = await startEmbeddedPostgres({
    dataDir: options.dataDir,
    logger: options.logger,
    ...(options.embeddedPort === undefined ? {} : { port: options.embeddedPort }),
  });
  try {
    const database = options.database ?? 'svc';
    await ensureDatabaseExists(server.url, database);
    const url = server.urlFor(database);
    const pool = await createDatabase({ ...options.pool, url, logger: options.logger });
    let closing: Promise<void> | undefined;
    return {
      url,
      pool,
      embedded: true,
      close: () =>
        (closing ??= (async () => {
          try {
            await pool.end();
          } finally {
            await server.stop();
          }
        })()),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}
