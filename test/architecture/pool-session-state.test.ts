// Pooled connections are not reset when they go back to the pool (kernel/services/db/pool.ts: no
// `DISCARD ALL`, a round trip per checkout saved). That is only safe while no code leaves session
// state on a pooled connection, so this test reads every source file for SQL that would: a
// session-level SET or set_config(…, false), a session advisory lock, LISTEN, a temporary table,
// a named PREPARE. The few files that need session state hold a dedicated client of their own and
// are named here; anything new of the kind must do the same (and be added with its reason).
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE_ROOTS = ['schemas', 'core', 'workflow', 'sdk', 'kernel', 'plugins', 'agent', 'cli', 'admin-cli', 'bin'];

/** Files whose session state lives on a client of their own, never a pooled one. */
const DEDICATED_CLIENTS = new Map([
  ['kernel/services/db/migrate.ts', 'migration lock and statement_timeout on its own pg.Client'],
  ['kernel/services/db/listen.ts', 'LISTEN on its own pg.Client'],
  ['kernel/orchestrator/cluster/leader.ts', 'the leader lock lives as long as its own pg.Client'],
]);

const SESSION_STATE: Array<[string, RegExp]> = [
  // Setting names are lower case (an upper-case word after "set" is prose: "set SVC_X to …").
  ['session SET', /[`'"]\s*(?:set|SET)\s+(?!(?:local|LOCAL)\b)(?:(?:session|SESSION)\s+)?[a-z_][a-z0-9_.]*\s*(?:=|\b(?:to|TO)\b)/],
  ['set_config(…, false)', /set_config\([^)]*,\s*false\s*\)/i],
  ['session advisory lock', /pg_(?:try_)?advisory_lock(?:_shared)?\s*\(/i],
  // A whole statement: the channel, then the string's end ("listen needs a handler" is prose).
  ['LISTEN', /[`'"]\s*listen\s+(?:\$\{[^}]*\}|"?[a-z_][a-z0-9_]*"?)\s*;?\s*[`'"]/i],
  ['temporary table', /create\s+(?:temp|temporary)\s+table/i],
  ['named PREPARE', /[`'"]\s*prepare\s+[a-z_]/i],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'browser' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

t.test('the patterns find session state (each against a statement that leaves some)', async (t) => {
  const samples = [
    'await c.query(`set statement_timeout = 0`)',
    "sql.unsafe`select set_config('a.b', 'x', false)`",
    'sql.unsafe`SELECT pg_try_advisory_lock(42)`',
    "client.query('LISTEN svc_jobs')",
    'sql.unsafe`CREATE TEMP TABLE t (a int)`',
    "client.query('PREPARE q AS select 1')",
  ];
  for (const [i, [name, pattern]] of SESSION_STATE.entries()) t.match(samples[i], pattern, `${name} is found`);
  t.match('await next.query(`listen ${next.escapeIdentifier(channel)}`)', SESSION_STATE[3]![1], "listen.ts's own form is found");
  const harmless = [
    'sql.unsafe`SET LOCAL lock_timeout = 1000`',
    "set_config('svc.x', 'deferred', true)",
    'UPDATE jobs SET status = 1',
    'pg_advisory_xact_lock(1)',
    'listen(channel, handler)',
    "'listen needs a handler function'",
    "'set SVC_ORCHESTRATOR_PROVENANCE_ISSUER to the issuer'",
  ];
  for (const text of harmless) t.notOk(SESSION_STATE.some(([, p]) => p.test(text)), `not session state: ${text}`);
});

t.test('no source file leaves session state on a pooled connection', async (t) => {
  const files = SOURCE_ROOTS.flatMap((dir) => sourceFiles(join(root, dir)));
  t.ok(files.length > 300, `read ${files.length} source files`);
  const found: string[] = [];
  for (const file of files) {
    const name = relative(root, file);
    if (DEDICATED_CLIENTS.has(name)) continue;
    const lines = readFileSync(file, 'utf8').split('\n');
    for (const [index, line] of lines.entries()) {
      if (/^\s*(\/\/|\*)/.test(line)) continue;
      for (const [what, pattern] of SESSION_STATE) if (pattern.test(line)) found.push(`${name}:${index + 1}: ${what}: ${line.trim()}`);
    }
  }
  t.same(found, [], 'session state only in the files with dedicated clients');
  for (const name of DEDICATED_CLIENTS.keys()) t.ok(files.some((f) => relative(root, f) === name), `${name} exists`);
});
