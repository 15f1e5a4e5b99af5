// Log search (docs/log-search.md): the lines of an org's stored job logs that contain a text,
// ignoring case and colour escapes (svc_log_plain, migration 0911), newest run first, with the
// lines around each. Lines live in `job_logs` chunks
// (masked by the agent before they were sent, so a masked secret is never findable); the
// trigram index over each chunk's text (migration 0910) narrows the chunks to read, and only
// those chunks are opened to pick the matching lines. Every read names the org.
import { Type, type Static } from 'typebox';
import type { CommonQueryMethods } from 'slonik';
import { InputError } from '../../../core/errors.ts';
import { checkSearchRange, checkSearchText, likePattern } from '../../../core/log-search.ts';
import type { LogSearchAnswer, LogSearchHit, LogSearchQuery } from '../../../schemas/wire/relay-log-search.ts';
import { PLAN_EACH_EXECUTION, sql, sqlTyped, type DatabasePool } from '../../services/db/index.ts';

/** A search reading longer than this is stopped and answered SVC_ERR_LOG_SEARCH_TOO_BROAD. */
export const LOG_SEARCH_TIMEOUT_MS = 10_000;

const HitRow = Type.Object({
  run_id: Type.String(),
  repository: Type.String(),
  ref: Type.Union([Type.String(), Type.Null()]),
  workflow: Type.String(),
  run_status: Type.String(),
  run_created_at: Type.String(),
  job_id: Type.String(),
  job: Type.String(),
  job_status: Type.String(),
  seq: Type.Number(),
  index: Type.Number(),
  line: Type.Unknown(),
});
type HitRow = Static<typeof HitRow>;
const CandidateRow = Type.Object({ ...HitRow.properties, candidates: Type.Number() });
const ChunkRow = Type.Object({ job_id: Type.String(), seq: Type.Number(), texts: Type.Unknown() });
const StepRow = Type.Object({ job_id: Type.String(), index: Type.Number(), name: Type.String() });

/** The query's conditions on `r` (runs) and, unless `runsOnly`, `j` (jobs). */
function filters(orgId: string, q: LogSearchQuery, runsOnly = false) {
  const parts = [sql.fragment`r.org_id = ${orgId}`];
  if (q.repository !== undefined) parts.push(sql.fragment`r.repository = ${q.repository}`);
  if (q.workflow !== undefined) parts.push(sql.fragment`r.workflow = ${q.workflow}`);
  if (q.status !== undefined) parts.push(sql.fragment`r.status = ${q.status}`);
  if (q.since !== undefined) parts.push(sql.fragment`r.created_at >= ${q.since}::timestamptz`);
  if (q.until !== undefined) parts.push(sql.fragment`r.created_at < ${q.until}::timestamptz`);
  if (q.job !== undefined && !runsOnly) parts.push(sql.fragment`(j.name = ${q.job} OR j.display_name = ${q.job})`);
  if (q.branch !== undefined) {
    const b = q.branch.startsWith('refs/') ? q.branch : `refs/heads/${q.branch}`;
    parts.push(sql.fragment`(r.ref = ${b} OR (r.head_ref <> '' AND r.head_ref = ${q.branch.replace(/^refs\/heads\//, '')}))`);
  }
  return sql.join(parts, sql.fragment` AND `);
}

const LINE_COLUMNS = sql.fragment`
  r.id::text AS run_id, r.repository, r.ref, r.workflow, r.status AS run_status,
  to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS run_created_at,
  j.id::text AS job_id, j.display_name AS job, j.status AS job_status, l.seq, (e.ord - 1)::int AS index, e.line`;
const LINE_ORDER = sql.fragment`ORDER BY r.created_at DESC, r.id DESC, j.created_at, j.id, l.seq, e.ord`;

/**
 * Chunks the index may hand over for one search. Up to this many matching chunks (a rare or
 * uncommon text) are all read and their lines sorted newest run first; past it (a common text)
 * the search walks the org's runs newest first instead and stops at `limit` lines, so a common
 * word costs a few windows of runs instead of every chunk that holds it.
 */
export const INDEX_CANDIDATES_MAX = 200;
/** Runs in the first window of the newest-first walk; each next window doubles, up to WALK_RUNS_MAX. */
const WALK_RUNS_FIRST = 20;
const WALK_RUNS_MAX = 640;
const WindowRow = Type.Object({ id: Type.String(), at: Type.String() });
type WindowRow = Static<typeof WindowRow>;

type Matches = { rows: readonly HitRow[]; complete: boolean };

/** Through the index: every matching chunk of the org (when there are at most INDEX_CANDIDATES_MAX), else null. */
async function byIndex(tx: CommonQueryMethods, orgId: string, q: LogSearchQuery, pattern: string): Promise<readonly HitRow[] | null> {
  const rows = await tx.any(sqlTyped(CandidateRow)`${PLAN_EACH_EXECUTION}
    WITH cand AS MATERIALIZED (
      SELECT l.job_id, l.seq FROM job_logs l JOIN jobs j ON j.id = l.job_id JOIN runs r ON r.id = j.run_id
      WHERE svc_log_chunk_text(l.lines) ILIKE ${pattern} AND ${filters(orgId, q)}
      LIMIT ${INDEX_CANDIDATES_MAX + 1})
    SELECT ${LINE_COLUMNS}, (SELECT count(*) FROM cand)::int AS candidates
    FROM cand JOIN job_logs l ON l.job_id = cand.job_id AND l.seq = cand.seq
    JOIN jobs j ON j.id = l.job_id JOIN runs r ON r.id = j.run_id
    CROSS JOIN LATERAL jsonb_array_elements(l.lines) WITH ORDINALITY AS e(line, ord)
    WHERE svc_log_plain(e.line->>'text') ILIKE ${pattern}
    ${LINE_ORDER} LIMIT ${q.limit + 1}`);
  return rows.length > 0 && rows[0]!.candidates > INDEX_CANDIDATES_MAX ? null : rows;
}

/**
 * Newest runs first, a growing window at a time, until `limit + 1` lines or `deadline`. The
 * chunks of a window are read through the primary key and their lines matched one by one: no
 * condition on the chunk text, which the planner could send through the trigram index (it takes
 * ILIKE for selective), reading every chunk of every run that holds a common text.
 */
async function byWalk(tx: CommonQueryMethods, orgId: string, q: LogSearchQuery, pattern: string, deadline: number): Promise<Matches> {
  const rows: HitRow[] = [];
  let after: WindowRow | null = null;
  for (let size = WALK_RUNS_FIRST; rows.length <= q.limit; size = Math.min(WALK_RUNS_MAX, size * 2)) {
    if (performance.now() > deadline) return { rows, complete: false };
    const from: ReturnType<typeof sql.fragment> = after === null ? sql.fragment`TRUE` : sql.fragment`(r.created_at, r.id) < (${after.at}::timestamptz, ${after.id}::uuid)`;
    const window: readonly WindowRow[] = await tx.any(sqlTyped(WindowRow)`${PLAN_EACH_EXECUTION}
      SELECT r.id::text AS id, to_char(r.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at FROM runs r
      WHERE ${filters(orgId, q, true)} AND ${from} ORDER BY r.created_at DESC, r.id DESC LIMIT ${size}`);
    if (window.length === 0) break;
    after = window[window.length - 1]!;
    rows.push(...(await tx.any(sqlTyped(HitRow)`${PLAN_EACH_EXECUTION}
      SELECT ${LINE_COLUMNS}
      FROM runs r JOIN jobs j ON j.run_id = r.id JOIN job_logs l ON l.job_id = j.id
      CROSS JOIN LATERAL jsonb_array_elements(l.lines) WITH ORDINALITY AS e(line, ord)
      WHERE r.id = ANY(${sql.array(window.map((w) => w.id), 'uuid')}) AND ${filters(orgId, q)} AND svc_log_plain(e.line->>'text') ILIKE ${pattern}
      ${LINE_ORDER} LIMIT ${q.limit + 1 - rows.length}`)));
    if (window.length < size) break;
  }
  return { rows, complete: true };
}

/** The matching lines, newest run first, then job, then position in the job's log; `limit + 1` to tell whether there are more. */
async function matchingLines(pool: DatabasePool, orgId: string, q: LogSearchQuery): Promise<Matches> {
  const pattern = likePattern(q.text);
  const deadline = performance.now() + LOG_SEARCH_TIMEOUT_MS;
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT set_config('statement_timeout', ${String(LOG_SEARCH_TIMEOUT_MS)}, true)`);
    const indexed = await byIndex(tx, orgId, q, pattern);
    return indexed !== null ? { rows: indexed, complete: true } : byWalk(tx, orgId, q, pattern, deadline);
  });
}

function isQueryCanceled(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== null && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if ((e as { code?: unknown }).code === '57014') return true;
  }
  return false;
}

const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);

/** Line texts of the chunks around each hit: enough chunks for `context` lines (a chunk holds at least one line). */
async function contextOf(pool: DatabasePool, rows: readonly HitRow[], context: number): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (context === 0 || rows.length === 0) return out;
  const jobs = rows.map((r) => r.job_id);
  const from = rows.map((r) => Math.max(0, r.seq - context));
  const to = rows.map((r) => r.seq + context);
  const chunks = await pool.any(sqlTyped(ChunkRow)`${PLAN_EACH_EXECUTION}
    SELECT DISTINCT l.job_id::text AS job_id, l.seq, jsonb_path_query_array(l.lines, '$[*].text') AS texts
    FROM unnest(${sql.array(jobs, 'uuid')}::uuid[], ${sql.array(from, 'int4')}::int4[], ${sql.array(to, 'int4')}::int4[]) AS w(job_id, lo, hi)
    JOIN job_logs l ON l.job_id = w.job_id AND l.seq BETWEEN w.lo AND w.hi`);
  for (const c of chunks) out.set(`${c.job_id}/${c.seq}`, Array.isArray(c.texts) ? c.texts.map((t) => str(t)) : []);
  return out;
}

function around(chunks: Map<string, string[]>, row: HitRow, context: number): { before: string[]; after: string[] } {
  if (context === 0) return { before: [], after: [] };
  const before: string[] = [];
  const after: string[] = [];
  const here = chunks.get(`${row.job_id}/${row.seq}`) ?? [];
  before.unshift(...here.slice(Math.max(0, row.index - context), row.index));
  for (let seq = row.seq - 1; before.length < context && seq >= row.seq - context && seq >= 0; seq -= 1) {
    const lines = chunks.get(`${row.job_id}/${seq}`) ?? [];
    before.unshift(...lines.slice(Math.max(0, lines.length - (context - before.length))));
  }
  after.push(...here.slice(row.index + 1, row.index + 1 + context));
  for (let seq = row.seq + 1; after.length < context && seq <= row.seq + context; seq += 1) {
    after.push(...(chunks.get(`${row.job_id}/${seq}`) ?? []).slice(0, context - after.length));
  }
  return { before, after };
}

/** Index of the first step of each job with each name (lines name their step; the log viewer links by name). */
async function stepIndexes(pool: DatabasePool, rows: readonly HitRow[]): Promise<Map<string, number>> {
  const jobs = [...new Set(rows.map((r) => r.job_id))];
  const out = new Map<string, number>();
  if (jobs.length === 0) return out;
  const steps = await pool.any(sqlTyped(StepRow)`
    SELECT job_id::text AS job_id, index, name FROM job_steps WHERE job_id = ANY(${sql.array(jobs, 'uuid')}) ORDER BY job_id, index`);
  for (const s of steps) if (!out.has(`${s.job_id}/${s.name}`)) out.set(`${s.job_id}/${s.name}`, s.index);
  return out;
}

/** Checks the query (refusing bad input before any read) and answers it. */
export async function searchLogs(pool: DatabasePool, orgId: string, query: LogSearchQuery): Promise<LogSearchAnswer> {
  checkSearchText(query.text);
  checkSearchRange(query.since, query.until);
  const started = performance.now();
  let matches: Matches;
  try {
    matches = await matchingLines(pool, orgId, query);
  } catch (error) {
    if (!isQueryCanceled(error)) throw error;
    throw new InputError('SVC_ERR_LOG_SEARCH_TOO_BROAD', `the search read for ${LOG_SEARCH_TIMEOUT_MS / 1000} s without finishing; narrow it with a longer text, a repository, workflow, job or time range`, { cause: error });
  }
  const more = matches.rows.length > query.limit || !matches.complete;
  const shown = matches.rows.slice(0, query.limit);
  const [chunks, steps] = await Promise.all([contextOf(pool, shown, query.context), stepIndexes(pool, shown)]);
  const hits = shown.map((r): LogSearchHit => {
    const line = (r.line ?? {}) as Record<string, unknown>;
    const step = str(line['step']);
    return {
      runId: r.run_id,
      repository: r.repository,
      ref: r.ref,
      workflow: r.workflow,
      runStatus: r.run_status,
      runCreatedAt: r.run_created_at,
      jobId: r.job_id,
      job: r.job,
      jobStatus: r.job_status,
      step,
      stepIndex: steps.get(`${r.job_id}/${step}`) ?? null,
      seq: r.seq,
      index: r.index,
      at: str(line['at']),
      stream: str(line['stream'], 'stdout'),
      text: str(line['text']),
      ...around(chunks, r, query.context),
    };
  });
  return { hits, more, tookMs: Math.round((performance.now() - started) * 10) / 10 };
}
