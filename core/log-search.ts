// The rules of a log search query (docs/log-search.md), one place for every surface: the relay's
// and the admin API's routes check what a person typed before anything reaches the database, and
// the orchestrator checks again what the relay sent. A query is a substring matched ignoring case
// (like `grep -i -F`); the trigram index can only narrow the chunks to read when the text holds
// three letters or digits in a row, so shorter text is refused instead of reading every chunk.
import { LOG_SEARCH_CONTEXT_MAX, LOG_SEARCH_LIMIT_MAX, LOG_SEARCH_TEXT_MAX, type LogSearchQuery } from '../schemas/wire/relay-log-search.ts';
import { InputError } from './errors.ts';

export const LOG_SEARCH_TEXT_MIN_RUN = 3;
export const LOG_SEARCH_DEFAULT_LIMIT = 50;
export const LOG_SEARCH_DEFAULT_CONTEXT = 2;
const RUN_STATUSES: readonly string[] = ['held', 'queued', 'running', 'completed', 'failed', 'cancelled', 'skipped'];
const WORD_RUN = /[\p{L}\p{N}]{3}/u;
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

function invalid(reason: string): InputError {
  return new InputError('SVC_ERR_LOG_SEARCH_INVALID', `log search: ${reason}`);
}

/** The search text as given, or a clear refusal (empty, too short for the index, too long, a line break). */
export function checkSearchText(text: string): string {
  if (text.trim() === '') throw invalid('the search text is empty; give the text to find, e.g. svc logs search "connection refused"');
  if (text.length > LOG_SEARCH_TEXT_MAX) throw invalid(`the search text is ${text.length} characters; at most ${LOG_SEARCH_TEXT_MAX} (search for a distinctive part of the line)`);
  if (CONTROL.test(text)) throw invalid('the search text holds a line break or control character; a match is found within one line, so search for one line\'s text');
  if (!WORD_RUN.test(text)) {
    throw invalid(`"${text}" is too short to search for: include at least ${LOG_SEARCH_TEXT_MIN_RUN} letters or digits in a row (the index is made of 3-character pieces)`);
  }
  return text;
}

/**
 * A time bound: an ISO date or date-time (`2026-12-01`, `2026-12-01T10:00:00Z`), or an age
 * back from `now` (`30m`, `12h`, `7d`). Returns the ISO date-time.
 */
export function parseSearchTime(value: string, flag: string, now = Date.now()): string {
  const age = /^(\d{1,6})([mhd])$/.exec(value.trim());
  if (age !== null) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as 'm' | 'h' | 'd'];
    return new Date(now - Number(age[1]) * unit).toISOString();
  }
  const iso = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim());
  const at = iso ? Date.parse(value.trim()) : Number.NaN;
  if (Number.isNaN(at)) throw invalid(`${flag} "${value.slice(0, 60)}" is not a time: give an ISO date or date-time (2026-12-01, 2026-12-01T10:00:00Z) or an age (30m, 12h, 7d)`);
  return new Date(at).toISOString();
}

/** Refuses a range that ends before it starts. */
export function checkSearchRange(since: string | undefined, until: string | undefined): void {
  if (since !== undefined && until !== undefined && Date.parse(since) > Date.parse(until)) {
    throw invalid(`since (${since}) is after until (${until}): nothing can match`);
  }
}

/** The ILIKE pattern matching `text` anywhere in a line (\, % and _ taken literally). */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** What a person typed (a route's query string, the CLI's flags), before it is checked. */
export interface LogSearchInput {
  q?: string | undefined;
  repository?: string | undefined;
  branch?: string | undefined;
  workflow?: string | undefined;
  job?: string | undefined;
  status?: LogSearchQuery['status'] | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit?: number | undefined;
  context?: number | undefined;
}

/** The checked query, or the first refusal (SVC_ERR_LOG_SEARCH_INVALID) saying what to change. */
export function toLogSearchQuery(input: LogSearchInput, now = Date.now()): LogSearchQuery {
  const text = checkSearchText(input.q ?? '');
  const since = input.since === undefined ? undefined : parseSearchTime(input.since, 'since', now);
  const until = input.until === undefined ? undefined : parseSearchTime(input.until, 'until', now);
  checkSearchRange(since, until);
  if (input.status !== undefined && !RUN_STATUSES.includes(input.status)) throw invalid(`status "${String(input.status).slice(0, 40)}" is not a run status: one of ${RUN_STATUSES.join(', ')}`);
  const limit = input.limit ?? LOG_SEARCH_DEFAULT_LIMIT;
  const context = input.context ?? LOG_SEARCH_DEFAULT_CONTEXT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LOG_SEARCH_LIMIT_MAX) throw invalid(`limit ${limit} is out of range: 1 to ${LOG_SEARCH_LIMIT_MAX}`);
  if (!Number.isInteger(context) || context < 0 || context > LOG_SEARCH_CONTEXT_MAX) throw invalid(`context ${context} is out of range: 0 to ${LOG_SEARCH_CONTEXT_MAX} lines`);
  const opt = <K extends 'repository' | 'branch' | 'workflow' | 'job' | 'status'>(k: K) => (input[k] === undefined || input[k] === '' ? {} : { [k]: input[k] });
  return {
    text,
    ...opt('repository'),
    ...opt('branch'),
    ...opt('workflow'),
    ...opt('job'),
    ...opt('status'),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    limit,
    context,
  };
}
