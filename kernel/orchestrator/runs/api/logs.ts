// Log lines of a run after a cursor, for `svc runs logs [--follow]` (relayed as
// `run.logs.request`). Lines are stored per job as chunks (`job_logs`: seq → lines, already
// masked by the agent); a page walks the run's jobs in order and their chunks by seq, and stops
// at a byte budget so one page always fits a relay frame. The cursor records, per job, the next
// chunk and how many of its lines were already returned:
//   `c1_` + entries joined by `.`, an entry `<first 12 hex of the job id>-<seq>[-<offset>]`.
import { Type } from 'typebox';
import { MAX_LOG_CURSOR_LENGTH, type RunLogLine, type RunLogsPage } from '../../../../schemas/wire/relay.ts';
import { sql, sqlTyped, type DatabasePool } from '../../../services/db/index.ts';
import { InputError } from '../../../../core/errors.ts';
import { TERMINAL_RUN_STATUSES, findRun, jobsOfRun } from './show.ts';

/** JSON bytes of lines per page: well under the relay's 4 MiB frame limit. */
export const LOG_PAGE_BYTES = 1024 * 1024;
/** Chunks read per query. */
const CHUNKS_PER_QUERY = 100;
const CURSOR_PREFIX = 'c1_';

export interface CursorEntry {
  /** Next chunk seq to read. */
  seq: number;
  /** Lines of chunk `seq` already returned. */
  offset: number;
}

const jobKey = (jobId: string): string => jobId.replace(/-/g, '').slice(0, 12).toLowerCase();

function badCursor(why: string): InputError {
  return new InputError('SVC_ERR_RUNS_LOG_CURSOR_INVALID', `log cursor is not valid (${why}): pass back the cursor of the previous page, or none to start over`);
}

/** Cursor text → entries by job key. Empty or absent: from the start. */
export function decodeCursor(cursor: string | undefined): Map<string, CursorEntry> {
  const out = new Map<string, CursorEntry>();
  if (cursor === undefined || cursor === '') return out;
  if (cursor.length > MAX_LOG_CURSOR_LENGTH) throw badCursor('too long');
  if (!cursor.startsWith(CURSOR_PREFIX)) throw badCursor(`it does not start with ${CURSOR_PREFIX}`);
  const body = cursor.slice(CURSOR_PREFIX.length);
  if (body === '') return out;
  for (const entry of body.split('.')) {
    const m = /^([0-9a-f]{12})-(\d{1,9})(?:-(\d{1,6}))?$/.exec(entry);
    if (m === null) throw badCursor(`bad entry "${entry.slice(0, 40)}"`);
    if (out.has(m[1]!)) throw badCursor(`job ${m[1]} appears twice`);
    out.set(m[1]!, { seq: Number(m[2]), offset: m[3] === undefined ? 0 : Number(m[3]) });
  }
  return out;
}

export function encodeCursor(entries: ReadonlyMap<string, CursorEntry>): string {
  const parts = [...entries].map(([key, e]) => `${key}-${e.seq}${e.offset > 0 ? `-${e.offset}` : ''}`);
  return CURSOR_PREFIX + parts.join('.');
}

const ChunkRow = Type.Object({ job_id: Type.String(), seq: Type.Number(), lines: Type.Unknown() });

interface StoredLine {
  at?: unknown;
  step?: unknown;
  stream?: unknown;
  text?: unknown;
}

export async function readLogPage(pool: DatabasePool, orgId: string, runId: string, after?: string, options: { pageBytes?: number } = {}): Promise<RunLogsPage> {
  const cursor = decodeCursor(after);
  const run = await findRun(pool, orgId, runId);
  const jobs = await jobsOfRun(pool, run.id);
  const byKey = new Map(jobs.map((j) => [jobKey(j.id), j]));
  for (const key of cursor.keys()) if (!byKey.has(key)) throw badCursor(`job ${key} is not part of run ${run.id}`);
  const budget = options.pageBytes ?? LOG_PAGE_BYTES;
  const lines: RunLogLine[] = [];
  let bytes = 0;
  let more = false;

  const ids = jobs.map((j) => j.id);
  const starts = jobs.map((j) => cursor.get(jobKey(j.id))?.seq ?? 0);
  if (ids.length > 0) {
    // Chunks from the cursor on, in job order then seq; re-queried until the budget or the end.
    let exhausted = false;
    while (!exhausted && !more) {
      const rows = await pool.any(sqlTyped(ChunkRow)`
        with c(job_id, seq, ord) as (select * from unnest(${sql.array(ids, 'uuid')}::uuid[], ${sql.array(starts, 'int4')}::int4[]) with ordinality)
        select l.job_id::text as job_id, l.seq, l.lines
        from c join job_logs l on l.job_id = c.job_id and l.seq >= c.seq
        order by c.ord, l.seq limit ${CHUNKS_PER_QUERY}`);
      exhausted = rows.length < CHUNKS_PER_QUERY;
      for (const row of rows) {
        const job = jobs.find((j) => j.id === row.job_id)!;
        const key = jobKey(job.id);
        const entry = cursor.get(key) ?? { seq: 0, offset: 0 };
        const stored = Array.isArray(row.lines) ? (row.lines as StoredLine[]) : [];
        let index = row.seq === entry.seq ? entry.offset : 0;
        for (; index < stored.length; index++) {
          const l = stored[index]!;
          const line: RunLogLine = {
            jobId: job.id,
            job: job.display_name,
            seq: row.seq,
            at: typeof l.at === 'string' ? l.at : '',
            step: typeof l.step === 'string' ? l.step : '',
            stream: typeof l.stream === 'string' ? l.stream : 'stdout',
            text: typeof l.text === 'string' ? l.text : '',
          };
          const size = Buffer.byteLength(JSON.stringify(line));
          // Always make progress: the first line of a page goes out whatever its size.
          if (lines.length > 0 && bytes + size > budget) {
            more = true;
            break;
          }
          lines.push(line);
          bytes += size;
        }
        cursor.set(key, index >= stored.length ? { seq: row.seq + 1, offset: 0 } : { seq: row.seq, offset: index });
        if (more) break;
        starts[ids.indexOf(job.id)] = row.seq + 1;
      }
    }
  }
  return { runId: run.id, status: run.status, terminal: TERMINAL_RUN_STATUSES.has(run.status), lines, cursor: encodeCursor(cursor), more };
}
