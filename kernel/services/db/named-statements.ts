// Named statements for a pool's hot path. slonik sends every statement unnamed, so PostgreSQL
// parses, analyses and plans it again on each execution. This interceptor names each distinct
// statement text after a hash of that text: the pg driver then sends the text once per
// connection (Parse) and afterwards only binds values to it, and PostgreSQL keeps the parsed
// statement (and, after a few executions, a generic plan) in the backend.
//
// Why this is safe on connections the pool hands from one user to the next without a reset
// (pool.ts: no DISCARD ALL): a name is a function of the exact text, so whoever finds a
// statement already prepared on a connection wanted that very statement. The set of names is
// bounded: past `limit` distinct texts a pool's statements run unnamed as before, so SQL built
// with a varying shape cannot grow every backend's memory without end. A statement whose result
// columns follow a table's (`select *`, `returning *`, `t.*`) stays unnamed: once a migration
// (from another node, in a rolling upgrade) adds a column, PostgreSQL refuses to run its
// prepared form again ("cached plan must not change result type") on that connection.
import { createHash } from 'node:crypto';
import { sql, type Interceptor } from 'slonik';

/**
 * The comment that keeps a statement unnamed, so PostgreSQL plans it for its own parameters at
 * every execution: `${PLAN_EACH_EXECUTION}` at the start of its text. For statements that pick
 * rows of a growing table by an array of keys (`= any($1)`, a join with `unnest($1, …)`).
 * From a named statement's sixth execution on, PostgreSQL may switch to a generic plan (when it
 * looks no costlier than the five custom ones) and keeps it until the table's statistics change. Made while the table is small (every new installation,
 * and for good on a cluster whose statistics nobody refreshes, such as one with autovacuum off),
 * that plan is a sequential scan with a hash join, and it stays one while the table grows: on
 * such a cluster the event-log confirmation and the status feed's marks read their whole tables,
 * 3–4 ms a statement after 10 s at 200 webhooks/s, and a cached plan of the confirmation took
 * 26 ms at 100,000 rows where a fresh plan's index scan took under 1 ms (issue 19). Planning
 * afresh costs a fraction of a millisecond, and these statements run a few times a second.
 * (Planning every named statement afresh, `plan_cache_mode = force_custom_plan`, cost the
 * database more CPU at 200 webhooks/s than it saved: the per-delivery statements' generic plans
 * are right.)
 */
export const PLAN_EACH_EXECUTION = sql.fragment`/* svc: plan each execution */`;
const PLAN_EACH_EXECUTION_MARK = PLAN_EACH_EXECUTION.sql;

/** Distinct statement texts one pool names; a hot path has a few dozen. */
export const NAMED_STATEMENTS_MAX = 256;

export interface NamedStatements extends Interceptor {
  /** How many distinct texts have a name (tests, metrics). */
  readonly size: number;
}

/** How many texts seen once (not named yet) a `fromUse` > 1 interceptor remembers before it starts over. */
const SEEN_ONCE_MAX = 4_096;

/**
 * `fromUse`: the execution of a text from which it is named. 1 names every text at once (a hot
 * path whose statements are all repeated). 2 leaves the one-off statements of a shared pool
 * (migrations, an operator's request) unnamed, so the `limit` names go to the texts that repeat:
 * the periodic passes and per-delivery work, which PostgreSQL otherwise parses and plans afresh
 * every time (on a busy machine planning a short query cost more than running it).
 */
export function namedStatementsInterceptor(limit: number = NAMED_STATEMENTS_MAX, fromUse = 1): NamedStatements {
  const names = new Map<string, string>();
  const seen = new Set<string>();
  /** Texts PostgreSQL refused to run again in their prepared form: unnamed from then on. */
  const refused = new Set<string>();
  return {
    name: 'svc-named-statements',
    get size() {
      return names.size;
    },
    transformQuery(_context, query) {
      if (query.name !== undefined) return query;
      let name = names.get(query.sql);
      if (name === undefined) {
        if (names.size >= limit || followsTable(query.sql) || refused.has(query.sql) || query.sql.startsWith(PLAN_EACH_EXECUTION_MARK)) return query;
        if (fromUse > 1 && !seen.has(query.sql)) {
          if (seen.size >= SEEN_ONCE_MAX) seen.clear();
          seen.add(query.sql);
          return query;
        }
        seen.delete(query.sql);
        name = `svc_${createHash('sha256').update(query.sql).digest('hex').slice(0, 32)}`;
        names.set(query.sql, name);
      }
      return { ...query, name };
    },
    // A column's type changed under a named statement (a migration from another node): PostgreSQL
    // refuses its prepared form on that connection from now on, so the text runs unnamed.
    queryExecutionError(_context, query, error) {
      if (resultTypeChanged(error)) {
        names.delete(query.sql);
        refused.add(query.sql);
      }
      return null;
    },
  };
}

function resultTypeChanged(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth += 1) {
    if (/cached plan must not change result type/i.test(e.message)) return true;
  }
  return false;
}

/** `*` as a result column: `select *`, `select t.*`, `returning *` (not `count(*)`, not `a * b`). */
function followsTable(text: string): boolean {
  return /(?:\bselect|\breturning|,)\s*(?:distinct\s+)?(?:[a-z_][a-z0-9_]*\.)?\*/i.test(text) || /\b[a-z_][a-z0-9_]*\.\*/i.test(text);
}
