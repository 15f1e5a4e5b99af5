// Log search over the relay (docs/log-search.md): `svc logs search`, the dashboard's search box
// and any API client send one `logs.search.request` with the checked query; the orchestrator
// answers the matching lines with their run, job, step and a few lines around each. Part of the
// relay protocol (schemas/wire/relay.ts lists it).
import { Type, type Static } from 'typebox';
import { DashboardError, Id, Strict } from './relay-base.ts';

const Time = Type.String({ format: 'date-time' });
export const LOG_SEARCH_TEXT_MAX = 200;
export const LOG_SEARCH_LIMIT_MAX = 500;
export const LOG_SEARCH_CONTEXT_MAX = 10;
export const LogSearchRunStatus = Type.Union([
  Type.Literal('held'),
  Type.Literal('queued'),
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('cancelled'),
  Type.Literal('skipped'),
]);

export const LogSearchQuery = Type.Object(
  {
    /** Searched for as a substring of a line, ignoring case (3 to 200 characters; core/log-search.ts checks it). */
    text: Type.String({ minLength: 1, maxLength: LOG_SEARCH_TEXT_MAX }),
    repository: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    /** A branch name (`main`) or a full ref (`refs/heads/main`); a pull request's head branch matches too. */
    branch: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    workflow: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    /** A job's name or display name (`test`, `test (node 24)`). */
    job: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    /** The run's status. */
    status: Type.Optional(LogSearchRunStatus),
    /** Runs created at or after / before. */
    since: Type.Optional(Time),
    until: Type.Optional(Time),
    limit: Type.Integer({ minimum: 1, maximum: LOG_SEARCH_LIMIT_MAX }),
    /** Lines shown before and after each match. */
    context: Type.Integer({ minimum: 0, maximum: LOG_SEARCH_CONTEXT_MAX }),
  },
  Strict,
);
export type LogSearchQuery = Static<typeof LogSearchQuery>;

export const LogSearchHit = Type.Object(
  {
    runId: Type.String(),
    repository: Type.String(),
    ref: Type.Union([Type.String(), Type.Null()]),
    workflow: Type.String(),
    runStatus: Type.String(),
    runCreatedAt: Time,
    jobId: Type.String(),
    job: Type.String(),
    jobStatus: Type.String(),
    /** The step that printed the line (its name; '' for the agent's own lines) and its index, when recorded. */
    step: Type.String(),
    stepIndex: Type.Union([Type.Integer(), Type.Null()]),
    /** Where the line is stored: chunk `seq` of the job's log, line `index` of that chunk. */
    seq: Type.Integer(),
    index: Type.Integer(),
    at: Type.String(),
    stream: Type.String(),
    text: Type.String(),
    before: Type.Array(Type.String()),
    after: Type.Array(Type.String()),
  },
  Strict,
);
export type LogSearchHit = Static<typeof LogSearchHit>;

export const LogSearchAnswer = Type.Object(
  {
    hits: Type.Array(LogSearchHit),
    /** More lines matched than `limit`: narrow the search or raise the limit. */
    more: Type.Boolean(),
    tookMs: Type.Number(),
  },
  Strict,
);
export type LogSearchAnswer = Static<typeof LogSearchAnswer>;

export const LogSearchRequest = Type.Object({ type: Type.Literal('logs.search.request'), requestId: Id, orgId: Id, query: LogSearchQuery }, Strict);
export const LogSearchResponse = Type.Object({ type: Type.Literal('logs.search.response'), requestId: Id, answer: Type.Optional(LogSearchAnswer), error: Type.Optional(DashboardError) }, Strict);
