// What the database's backends are doing while a bench measures (`--sample-db`): every few
// milliseconds one connection reads pg_stat_activity (the bench database's non-idle backends:
// state and wait event) and pg_locks (every lock not yet granted, the whole cluster: PostgreSQL's
// NOTIFY commit lock is on "database 0", shared by every database). The counts say where backends
// wait: `ClientRead` while `idle in transaction` is the client's turn, `IO:WALSync` a commit's
// flush, a `Lock:object` wait on database 0 the NOTIFY queue lock. It costs the server one small
// query per sample; run it only when looking for a cause.
import pg from 'pg';

export interface DbSample {
  stop(): Promise<string[]>;
}

const ACTIVITY = `
  select coalesce(nullif(application_name, ''), backend_type) as app, state,
    coalesce(wait_event_type || ':' || wait_event, 'on CPU') as wait,
    left(regexp_replace(coalesce(query, ''), '\\s+', ' ', 'g'), 48) as query
  from pg_stat_activity where datname = $1 and pid <> pg_backend_pid() and state is distinct from 'idle'`;
const WAITING = `
  select l.locktype, l.mode, coalesce(l.database, 0) as database, coalesce(l.relation::regclass::text, '') as relation,
    coalesce(l.classid, 0) as classid, coalesce(l.objid, 0) as objid, coalesce(a.datname, '?') as datname
  from pg_locks l left join pg_stat_activity a on a.pid = l.pid where not l.granted`;

// The whole cluster's WAL: records, bytes, waits for a full WAL buffer, writes and flushes (times
// only with track_wal_io_timing on).
const WAL = `select wal_records::float8 as records, wal_bytes::float8 as bytes, wal_buffers_full::float8 as full, wal_write::float8 as writes,
  wal_sync::float8 as syncs, wal_write_time as write_ms, wal_sync_time as sync_ms from pg_stat_wal`;
type WalRow = { records: number; bytes: number; full: number; writes: number; syncs: number; write_ms: number; sync_ms: number };

function walLine(a: WalRow, b: WalRow, seconds: number): string {
  const d = (k: keyof WalRow) => Number(b[k]) - Number(a[k]);
  const timing = d('sync_ms') > 0 ? `, mean flush ${(d('sync_ms') / Math.max(1, d('syncs'))).toFixed(2)} ms` : '';
  return `  WAL of the whole cluster: ${(d('bytes') / seconds / 1048576).toFixed(2)} MiB/s, ${(d('records') / seconds).toFixed(0)} records/s, ${(d('syncs') / seconds).toFixed(0)} flushes/s${timing}, WAL buffer full ${d('full')} times`;
}

export async function sampleDatabase(serverUrl: string, database: string, everyMs = 5): Promise<DbSample> {
  const client = new pg.Client({ connectionString: serverUrl, application_name: 'svc-bench-sampler' });
  await client.connect();
  const wal0 = (await client.query<WalRow>(WAL)).rows[0]!;
  const began = performance.now();
  const activity = new Map<string, number>();
  const locks = new Map<string, number>();
  let samples = 0;
  let stopped = false;
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const loop = (async () => {
    while (!stopped) {
      const a = await client.query<{ app: string; state: string; wait: string; query: string }>(ACTIVITY, [database]);
      const l = await client.query<{ locktype: string; mode: string; database: number; relation: string; classid: number; objid: number; datname: string }>(WAITING);
      samples += 1;
      for (const r of a.rows) add(activity, `${r.app} | ${r.state} | ${r.wait} | ${r.query}`);
      for (const r of l.rows) {
        const what = r.locktype === 'object' && Number(r.database) === 0 ? 'object on database 0 (NOTIFY commit lock)' : `${r.locktype} ${r.relation || `${r.classid}/${r.objid}`}`;
        add(locks, `${r.mode} ${what}, waiter in ${r.datname === database ? 'the bench database' : `another database (${r.datname})`}`);
      }
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop.catch(() => undefined);
      const wal1 = (await client.query<WalRow>(WAL)).rows[0]!;
      const seconds = (performance.now() - began) / 1000;
      await client.end();
      const top = (map: Map<string, number>, n: number) =>
        [...map].sort((x, y) => y[1] - x[1]).slice(0, n).map(([key, count]) => `    ${(count / Math.max(1, samples)).toFixed(2).padStart(6)}  ${key}`);
      return [
        `  database samples: ${samples}; mean backends per sample by (application | state | wait | statement):`,
        ...top(activity, 12),
        `  locks waited for (mean waiters per sample):${locks.size === 0 ? ' none seen' : ''}`,
        ...top(locks, 6),
        walLine(wal0, wal1, seconds),
      ];
    },
  };
}
