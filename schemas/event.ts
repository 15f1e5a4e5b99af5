// The normalized provider event: what every provider turns its payload into, and the only
// event shape trigger matching reads. Provider-specific fields stay in the raw payload.
import { Type, type Static } from 'typebox';

export const TRIGGER_TYPES = [
  'push',
  'pr',
  'comment',
  'tag',
  'release',
  'review',
  'review_comment',
  'dispatch',
  'create',
  'delete',
  'status',
  'workflow_run',
  'fork',
  'star',
  'watch',
  'schedule',
  'webhook',
  'event',
  'workflow_complete',
  'job_complete',
  'lifecycle',
  'workflows_failed_batch',
] as const;

export type TriggerType = (typeof TRIGGER_TYPES)[number];
export const TriggerType = Type.Unsafe<TriggerType>(Type.Union(TRIGGER_TYPES.map((t) => Type.Literal(t))));

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const EventRepository = Type.Object(
  {
    /** `owner/repo`. */
    fullName: Type.String({ minLength: 1 }),
    owner: Type.String(),
    name: Type.String(),
    id: Nullable(Type.String()),
    cloneUrl: Nullable(Type.String()),
    defaultBranch: Nullable(Type.String()),
  },
  { additionalProperties: false },
);
export type EventRepository = Static<typeof EventRepository>;

export const EventPullRequest = Type.Object(
  {
    number: Type.Integer({ minimum: 0 }),
    headRef: Type.String(),
    headSha: Type.String(),
    /** `owner/repo` of the head; differs from the base repository for a fork pull request. */
    headRepository: Type.String(),
    baseRef: Type.String(),
    baseSha: Type.String(),
    isFork: Type.Boolean(),
    draft: Type.Boolean(),
    merged: Type.Boolean(),
    title: Type.String(),
  },
  { additionalProperties: false },
);
export type EventPullRequest = Static<typeof EventPullRequest>;

export const NormalizedEvent = Type.Object(
  {
    /** Short name of the provider (`github`, `git`, `generic`, or `svc` for internal events). */
    provider: Type.String({ minLength: 1 }),
    /** Trigger family the event belongs to; `null` when no trigger can match it. */
    type: Nullable(TriggerType),
    /** The provider's own event name (`push`, `pull_request`, …). */
    providerEvent: Type.String(),
    action: Nullable(Type.String()),
    /** `push`, `pull_request:opened`, `schedule`, … (the identity token's `event_name`). */
    eventName: Type.String(),
    repository: Nullable(EventRepository),
    /** Full ref (`refs/heads/main`, `refs/tags/v1`) when the event has one. */
    ref: Nullable(Type.String()),
    branch: Nullable(Type.String()),
    tag: Nullable(Type.String()),
    sha: Nullable(Type.String()),
    beforeSha: Nullable(Type.String()),
    /** True for a push that deletes its ref. */
    deleted: Type.Boolean(),
    sender: Type.Object({ login: Type.String(), id: Nullable(Type.String()) }, { additionalProperties: false }),
    /** Head commit message; `null` when the event carries none (commitMessage filters are then indeterminate). */
    commitMessage: Nullable(Type.String()),
    /** Files changed, when the payload lists them; `null` when they must be fetched. */
    changedFiles: Nullable(Type.Array(Type.String())),
    pullRequest: Nullable(EventPullRequest),
    comment: Nullable(Type.Object({ id: Type.String(), body: Type.String(), author: Type.String() }, { additionalProperties: false })),
    installationId: Nullable(Type.String()),
    /** For custom, webhook and internal events: the event name triggers list. */
    customEventName: Nullable(Type.String()),
    /**
     * Internal events only: what the emitter sent (`ctx.emit` payload; `workflow_complete` and
     * `job_complete` fields; `scheduledAt` of a schedule fire). Steps read it as `ctx.event.payload`.
     */
    payload: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);
export type NormalizedEvent = Static<typeof NormalizedEvent>;
