// The relay's run index as the developer CLI reads it (`svc runs list`, docs/run-index.md):
// `GET /v1/orgs/:orgId/runs?limit=&status=&repository=&before=`, answered from the relay's own
// database, so it works while no orchestrator of the org is connected.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const NullableString = Type.Union([Type.String(), Type.Null()]);
const NullableTime = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

/** The run statuses of the orchestrator's records (the `runs.status` check). */
export const RUN_STATUSES = ['held', 'queued', 'running', 'completed', 'failed', 'cancelled', 'skipped'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const DEFAULT_RUN_LIST_LIMIT = 20;
export const MAX_RUN_LIST_LIMIT = 200;

/**
 * `before` pages back: the `nextBefore` of the previous page (`<createdAt>,<runId>`), or an ISO
 * timestamp (runs created strictly before it). Checked by the route with its own message.
 */
export const RunListQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RUN_LIST_LIMIT })),
    status: Type.Optional(Type.Union(RUN_STATUSES.map((s) => Type.Literal(s)))),
    repository: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    workflow: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    /** A branch name (`main`) or a full ref (`refs/heads/main`, `refs/tags/v1`). */
    branch: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    before: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  strict,
);
export type RunListQuery = Static<typeof RunListQuery>;

/**
 * One run of the index. Fields an older orchestrator did not send are null (`sha`, `eventName`,
 * `actor`, timings and lineage). `lastRerunAt` and `cancelledBy` are what the Platform tracks
 * (spec "Other records"); `jobs` counts the run's jobs by status.
 */
export const RunSummary = Type.Object(
  {
    runId: Type.String(),
    orgId: Type.String(),
    status: Type.String(),
    reason: NullableString,
    workflow: Type.String(),
    repository: Type.String(),
    ref: NullableString,
    sha: NullableString,
    eventName: NullableString,
    actor: NullableString,
    createdAt: Type.String({ format: 'date-time' }),
    startedAt: NullableTime,
    finishedAt: NullableTime,
    updatedAt: Type.String({ format: 'date-time' }),
    parentRunId: NullableString,
    originalRunId: NullableString,
    triggeredBy: NullableString,
    cancelledBy: NullableString,
    lastRerunAt: NullableTime,
    jobs: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
  },
  strict,
);
export type RunSummary = Static<typeof RunSummary>;

/** Newest first (created, then run id); `nextBefore` is set when a further page may exist. */
export const RunList = Type.Object(
  {
    runs: Type.Array(RunSummary),
    nextBefore: NullableString,
  },
  strict,
);
export type RunList = Static<typeof RunList>;

/** `svc report` (`GET /v1/orgs/:orgId/report?days=`): the org's recent runs summed up from the index. */
export const DEFAULT_REPORT_DAYS = 7;
export const MAX_REPORT_DAYS = 90;
export const RunReportQuery = Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_REPORT_DAYS })) }, strict);
export type RunReportQuery = Static<typeof RunReportQuery>;

const Rate = Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]);
export const WorkflowReport = Type.Object(
  {
    workflow: Type.String(),
    total: Type.Integer({ minimum: 0 }),
    statuses: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
    /** Failed among the runs that ended completed or failed; null when none ended so. */
    failureRate: Rate,
    /** Median of ended runs, started (else created) to finished; null when none ended. */
    medianDurationMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
  },
  strict,
);
export const RunReport = Type.Object(
  {
    orgId: Type.String(),
    since: Type.String({ format: 'date-time' }),
    total: Type.Integer({ minimum: 0 }),
    statuses: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
    failureRate: Rate,
    workflows: Type.Array(WorkflowReport),
  },
  strict,
);
export type RunReport = Static<typeof RunReport>;
