// A run's timeline for the dashboard's run page (docs/dashboard.md "Timeline"): per job, where its
// time went, in rows with millisecond durations: waiting for its needs, queued for an agent, the
// agent starting it, the agent's set-up phases (source restore, checkout and its parts,
// dependencies) and each step. A request of its own, so an older relay never receives it and an
// older orchestrator, which does not answer it, only costs the page its timeline. Part of the
// relay protocol (schemas/wire/relay.ts lists it).
import { Type, type Static } from 'typebox';
import { DashboardError, Id, NullableString, NullableTime, Strict } from './relay-base.ts';

const Time = Type.String({ format: 'date-time' });
const Millis = Type.Integer({ minimum: 0 });

/**
 * `waiting`: created until queued (its needs, an approval); `queued`: in the queue until the
 * dispatcher gave it to an agent; `dispatched`: until that agent reported it running; `phase`: an
 * agent set-up phase (`name` as the agent sent it: `source_restore`, `checkout`,
 * `checkout.fetch`, `deps`, …); `step`: a step (`name` its name, `status` its status).
 */
export const TimelineRowKind = Type.Union([Type.Literal('waiting'), Type.Literal('queued'), Type.Literal('dispatched'), Type.Literal('phase'), Type.Literal('step')]);
export type TimelineRowKind = Static<typeof TimelineRowKind>;

export const RunTimelineRow = Type.Object(
  {
    kind: TimelineRowKind,
    name: Type.String({ maxLength: 200 }),
    status: NullableString,
    startedAt: Time,
    /** Null while it lasts; `durationMs` then counts to when the answer was made. */
    finishedAt: NullableTime,
    durationMs: Millis,
  },
  Strict,
);
export type RunTimelineRow = Static<typeof RunTimelineRow>;

export const RunTimelineJob = Type.Object(
  {
    jobId: Id,
    name: Type.String(),
    displayName: Type.String(),
    status: Type.String(),
    needs: Type.Array(Type.String()),
    createdAt: Time,
    queuedAt: NullableTime,
    dispatchedAt: NullableTime,
    startedAt: NullableTime,
    finishedAt: NullableTime,
    /** In time order (a phase that ran beside another, e.g. a checkout beside the source restore, overlaps it). */
    rows: Type.Array(RunTimelineRow),
  },
  Strict,
);
export type RunTimelineJob = Static<typeof RunTimelineJob>;

export const RunTimeline = Type.Object(
  {
    runId: Id,
    createdAt: Time,
    startedAt: NullableTime,
    finishedAt: NullableTime,
    /** Created until its first job was dispatched (to now while none was); the runs list's "Queued". */
    queueMs: Type.Union([Millis, Type.Null()]),
    /** First dispatch until finished; null before either. */
    runMs: Type.Union([Millis, Type.Null()]),
    jobs: Type.Array(RunTimelineJob),
  },
  Strict,
);
export type RunTimeline = Static<typeof RunTimeline>;

export const RunTimelineRequest = Type.Object({ type: Type.Literal('run.timeline.request'), requestId: Id, orgId: Id, runId: Id }, Strict);
export const RunTimelineResponse = Type.Object(
  { type: Type.Literal('run.timeline.response'), requestId: Id, timeline: Type.Optional(RunTimeline), error: Type.Optional(DashboardError) },
  Strict,
);
