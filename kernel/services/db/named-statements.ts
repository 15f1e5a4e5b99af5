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
import type { Interceptor } from 'slonik';

/** Distinct statement texts one pool names; a hot path has a few dozen. */
export const NAMED_STATEMENTS_MAX = 256;

export interface NamedStatements extends Interceptor {
  /** How many distinct texts have a name (tests, metrics). */
  readonly size: number;
}

export function namedStatementsInterceptor(limit: number = NAMED_STATEMENTS_MAX): NamedStatements {
  const names = new Map<string, string>();
  return {
    name: 'svc-named-statements',
    get size() {
      return names.size;
    },
    transformQuery(_context, query) {
      if (query.name !== undefined) return query;
      let name = names.get(query.sql);
      if (name === undefined) {
        if (names.size >= limit || followsTable(query.sql)) return query;
        name = `svc_${createHash('sha256').update(query.sql).digest('hex').slice(0, 32)}`;
        names.set(query.sql, name);
      }
      return { ...query, name };
    },
  };
}

/** `*` as a result column: `select *`, `select t.*`, `returning *` (not `count(*)`, not `a * b`). */
function followsTable(text: string): boolean {
  return /(?:\bselect|\breturning|,)\s*(?:distinct\s+)?(?:[a-z_][a-z0-9_]*\.)?\*/i.test(text) || /\b[a-z_][a-z0-9_]*\.\*/i.test(text);
}
