// Relay <-> orchestrator WebSocket protocol. The orchestrator dials the relay
// (`GET {platform_url}/v1/orchestrators/connect`, `Authorization: Bearer <platform.token>`),
// sends `orchestrator.hello`, and from then on both sides exchange these messages as JSON text
// frames. Webhook bodies travel base64-encoded so the orchestrator verifies signatures over the
// exact bytes the provider sent.
import { Type, type Static } from 'typebox';
import { RemoteRunBody, RemoteRunResult, RemoteUpload } from '../http/remote-run.ts';
import { DeliveryRecord } from '../http/admin.ts';
import { DashboardError, Id, NullableString, NullableTime, Strict, TraceFields } from './relay-base.ts';
import {
  RunArtifactChunkRequest,
  RunArtifactChunkResponse,
  RunArtifactsRequest,
  RunArtifactsResponse,
  RunAttestationRequest,
  RunAttestationResponse,
  RunDetailRequest,
  RunDetailResponse,
  RunLogsRequest,
  RunLogsResponse,
  RunShowRequest,
  RunShowResponse,
} from './relay-runs.ts';
import { TestsRequest, TestsResponse } from './relay-tests.ts';
import { RunTimelineRequest, RunTimelineResponse } from './relay-timeline.ts';
import { LogSearchRequest, LogSearchResponse } from './relay-log-search.ts';
import { ApproverPrincipals, AuditListRequest, AuditListResponse, AuditRecordRequest, AuditRecordResponse, PeopleSyncRequest, PeopleSyncResponse, RelayActor } from './relay-people.ts';

export { DashboardError } from './relay-base.ts';
export * from './relay-runs.ts';
export * from './relay-people.ts';
export * from './relay-tests.ts';
export * from './relay-timeline.ts';
export * from './relay-log-search.ts';

/**
 * One number for both links (relay <-> orchestrator, agent <-> orchestrator). 4: `job.dispatch`
 * may carry `checkout.submodules`/`lfs`, `container.options` and `install`, which a protocol 3
 * agent drops or refuses; the floor stays at 3 so such agents still connect and the dispatcher
 * gives them only the jobs they can run (kernel/orchestrator/dispatch/protocol-gap.ts). 5: the
 * agent reports a failing command's exit code (`exitCode` on `job.status` and `step.status`), and
 * sends it only to an orchestrator that answered `agent.registered` with 5 or more; a job whose
 * retry policy lists exit codes goes only to agents of protocol 5.
 */
export const PROTOCOL_VERSION = 5;
/** The first protocol whose agents report `exitCode` (and whose orchestrators accept it). */
export const EXIT_CODE_PROTOCOL = 5;
/** The first protocol whose peers accept `traceparent`/`tracestate` on `webhook.deliver` and `job.dispatch` (docs/tracing.md). */
export const TRACE_PROTOCOL_VERSION = 5;
export const MIN_PROTOCOL_VERSION = 3;
/** RFC 6455 1002: the spec's WS_CLOSE_PROTOCOL_ERROR. */
export const WS_CLOSE_PROTOCOL_ERROR = 1002;
/** Application close codes (4000-4999 are free for applications). */
export const WS_CLOSE_UNAUTHORIZED = 4001;
export const WS_CLOSE_REFUSED = 4003;

export const ProviderKind = Type.String({ pattern: '^[a-z][a-z0-9-]{0,39}$' });

/** What the relay knows of a source: routing only, never a signing secret. */
export const RelaySource = Type.Object(
  {
    /** `<provider_kind>:<target id>` (`github:12345`) or `generic:<source_id>`. */
    routingKey: Type.String({ minLength: 3, maxLength: 300 }),
    providerKind: ProviderKind,
    /** For generic sources: the source id of the URL path. */
    sourceId: Type.Optional(Id),
    /** Per-source ingress limits the relay can apply before the orchestrator sees the bytes. */
    maxPayloadBytes: Type.Optional(Type.Integer({ minimum: 1 })),
    rateLimitRpm: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  Strict,
);
export type RelaySource = Static<typeof RelaySource>;

export const OrchestratorHello = Type.Object(
  {
    type: Type.Literal('orchestrator.hello'),
    protocolVersion: Type.Integer(),
    orchestratorId: Id,
    sources: Type.Array(RelaySource),
    /** The orchestrator's software version (`svc orchestrators`); optional for older orchestrators. */
    version: Type.Optional(Type.String({ maxLength: 100 })),
  },
  Strict,
);

export const RelayWelcome = Type.Object(
  {
    type: Type.Literal('relay.welcome'),
    protocolVersion: Type.Integer(),
    orgId: Id,
    /** Deliveries the relay holds for this org and will replay now, oldest first. */
    buffered: Type.Integer({ minimum: 0 }),
  },
  Strict,
);

export const WebhookDeliver = Type.Object(
  {
    type: Type.Literal('webhook.deliver'),
    /** The relay's id for this delivery; echoed in the ack. */
    deliveryRef: Id,
    orgId: Id,
    routingKey: Type.String({ minLength: 1 }),
    providerKind: ProviderKind,
    sourceId: Type.Optional(Id),
    /** Provider delivery id, or a generated UUID for generic sources without one. */
    deliveryId: Id,
    /** Lower-cased header names; only headers the orchestrator may need. */
    headers: Type.Record(Type.String(), Type.String()),
    bodyBase64: Type.String(),
    receivedAt: Type.String({ format: 'date-time' }),
    clientIp: Type.String(),
    /** True when replayed from the durable buffer. */
    replay: Type.Boolean(),
    ...TraceFields,
  },
  Strict,
);
export type WebhookDeliver = Static<typeof WebhookDeliver>;

export const ACK_RESULTS = [
  'accepted',
  'duplicate',
  'rejected_signature',
  'rejected_unknown_source',
  'rejected_misconfigured',
  'shed_retry_later',
] as const;
export type AckResult = (typeof ACK_RESULTS)[number];
export const AckResult = Type.Unsafe<AckResult>(Type.Union(ACK_RESULTS.map((r) => Type.Literal(r))));

export const WebhookAck = Type.Object(
  {
    type: Type.Literal('webhook.ack'),
    deliveryRef: Id,
    result: AckResult,
    retryAfterSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
    message: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  Strict,
);
export type WebhookAck = Static<typeof WebhookAck>;

export const SourceRegister = Type.Object({ type: Type.Literal('source.register'), source: RelaySource }, Strict);
export const SourceDeregister = Type.Object({ type: Type.Literal('source.deregister'), routingKey: Type.String({ minLength: 1 }) }, Strict);
/**
 * Signature metadata of a source (never the secret itself): lets the relay tell an operator
 * which sources verify signatures and whether a rotation is under way.
 */
export const SourceSecrets = Type.Object(
  {
    type: Type.Literal('source.secrets'),
    routingKey: Type.String({ minLength: 1 }),
    signatureMode: Type.Union([Type.Literal('hmac'), Type.Literal('bearer'), Type.Literal('ip-allowlist'), Type.Literal('none')]),
    rotating: Type.Boolean(),
  },
  Strict,
);


/**
 * Dashboard requests carry the org of the path (`orgId`): an orchestrator only answers for runs of
 * that org, even when it serves several. Optional on the first three for older relays.
 */
/** `by` (issue 42): who at the relay asked, for the audit record; optional for older relays. */
export const RunRerunRequest = Type.Object({ type: Type.Literal('run.rerun.request'), requestId: Id, runId: Id, triggeredBy: Type.String(),
  /** `failed`: restart from the failed jobs (docs/run-states.md); sent only when asked, so older orchestrators see the old shape. */
  mode: Type.Optional(Type.Literal('failed')), orgId: Type.Optional(Id), by: Type.Optional(RelayActor) }, Strict);
export const RunRerunResponse = Type.Object(
  { type: Type.Literal('run.rerun.response'), requestId: Id, newRunId: Type.Optional(Id), error: Type.Optional(DashboardError) },
  Strict,
);
export const RunCancelRequest = Type.Object({ type: Type.Literal('run.cancel.request'), requestId: Id, runId: Id, cancelledBy: Type.String(), orgId: Type.Optional(Id), by: Type.Optional(RelayActor) }, Strict);
export const RunCancelResponse = Type.Object(
  { type: Type.Literal('run.cancel.response'), requestId: Id, cancelledJobs: Type.Optional(Type.Integer({ minimum: 0 })), error: Type.Optional(DashboardError) },
  Strict,
);
/** Longest comment an approval decision carries (the orchestrator refuses more). */
export const MAX_APPROVAL_COMMENT_LENGTH = 2000;

/** What one decision did to one approval hold (docs/cli.md, "svc approve"). */
export const ApprovalHoldDecision = Type.Object(
  {
    /** Null when the run had no hold at all. */
    holdId: Type.Union([Id, Type.Null()]),
    level: Type.Union([Type.Literal('workflow'), Type.Literal('job'), Type.Literal('step'), Type.Literal('context'), Type.Null()]),
    job: Type.Union([Type.String(), Type.Null()]),
    context: Type.Union([Type.String(), Type.Null()]),
    /** A step hold: the step's name. */
    step: Type.Optional(Type.String()),
    /** The hold's status after the decision (`pending`, `approved`, `rejected`, …; `none`). */
    status: Type.String(),
    /** False: the decision was kept but changed nothing, for `ignoredReason`. */
    counted: Type.Boolean(),
    ignoredReason: Type.Optional(Type.String()),
  },
  Strict,
);
export type ApprovalHoldDecision = Static<typeof ApprovalHoldDecision>;

/** The answer to an approve or reject: the run's status after it, each hold, one sentence. */
export const ApprovalResult = Type.Object(
  { runId: Id, runStatus: Type.String(), decisions: Type.Array(ApprovalHoldDecision), message: Type.String() },
  Strict,
);
export type ApprovalResult = Static<typeof ApprovalResult>;

/** `svc approve|reject` and the dashboard's buttons: `actor` is the relay's authenticated caller. */
export const RunApproveRequest = Type.Object(
  {
    type: Type.Literal('run.approve.request'),
    requestId: Id,
    orgId: Id,
    runId: Id,
    actor: Type.String({ minLength: 1, maxLength: 200 }),
    decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]),
    via: Type.Union([Type.Literal('cli'), Type.Literal('dashboard')]),
    comment: Type.Optional(Type.String({ maxLength: MAX_APPROVAL_COMMENT_LENGTH })),
    /** Decide only the holds of this job (by name). */
    job: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    by: Type.Optional(RelayActor),
    /** The deciding person's teams and roles (team and role clauses); absent: users only. */
    principals: Type.Optional(ApproverPrincipals),
  },
  Strict,
);
export type RunApproveRequest = Static<typeof RunApproveRequest>;
export const RunApproveResponse = Type.Object(
  { type: Type.Literal('run.approve.response'), requestId: Id, result: Type.Optional(ApprovalResult), error: Type.Optional(DashboardError) },
  Strict,
);
export const DashboardPayload = Type.Object({ type: Type.Literal('dashboard.payload'), requestId: Id, runId: Id, orgId: Type.Optional(Id) }, Strict);
export const DashboardPayloadResponse = Type.Object(
  { type: Type.Literal('dashboard.payload.response'), requestId: Id, payload: Type.Optional(Type.Unknown()), error: Type.Optional(DashboardError) },
  Strict,
);

/** A status reason in `execution.status` / `job.status.forward` is cut to this many characters. */
export const MAX_STATUS_REASON_LENGTH = 2000;

/** Most delivery records one `deliveries.list.request` returns (the dashboard's event log). */
export const MAX_RELAYED_DELIVERIES = 200;

/** The event log of an org for the dashboard: newest first, with each record's pipeline steps. */
export const DeliveriesListRequest = Type.Object(
  {
    type: Type.Literal('deliveries.list.request'),
    requestId: Id,
    orgId: Id,
    status: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_RELAYED_DELIVERIES })),
  },
  Strict,
);
export const DeliveriesListResponse = Type.Object(
  { type: Type.Literal('deliveries.list.response'), requestId: Id, deliveries: Type.Optional(Type.Array(DeliveryRecord)), error: Type.Optional(DashboardError) },
  Strict,
);

/** The stored webhook body of one delivery (the event log's payload object). */
export const DeliveryPayloadRequest = Type.Object(
  { type: Type.Literal('delivery.payload.request'), requestId: Id, orgId: Id, deliveryId: Type.String({ minLength: 1, maxLength: 1000 }) },
  Strict,
);
export const DeliveryPayloadResponse = Type.Object(
  { type: Type.Literal('delivery.payload.response'), requestId: Id, payload: Type.Optional(Type.Unknown()), error: Type.Optional(DashboardError) },
  Strict,
);

/** An agent as the dashboard shows it: its current job only when that job is of the asking org. */
export const FleetAgent = Type.Object(
  {
    agentId: Type.String(),
    connected: Type.Boolean(),
    labels: Type.Array(Type.String()),
    lastSeenAt: Type.String(),
    currentJob: Type.Union([Type.Object({ runId: Type.String(), job: Type.String(), status: Type.String() }, Strict), Type.Null()]),
  },
  Strict,
);
export type FleetAgent = Static<typeof FleetAgent>;
/** Signing key metadata (never key material). */
export const FleetSigningKey = Type.Object({ kid: Type.String(), status: Type.String(), custody: Type.String(), createdAt: Type.String() }, Strict);
export type FleetSigningKey = Static<typeof FleetSigningKey>;

/** The dashboard's agents page: the orchestrator's agents and identity signing keys. */
export const FleetRequest = Type.Object({ type: Type.Literal('fleet.request'), requestId: Id, orgId: Id }, Strict);
export const FleetResponse = Type.Object(
  {
    type: Type.Literal('fleet.response'),
    requestId: Id,
    agents: Type.Optional(Type.Array(FleetAgent)),
    signingKeys: Type.Optional(Type.Array(FleetSigningKey)),
    error: Type.Optional(DashboardError),
  },
  Strict,
);

/** `svc run remote`: an upload slot for the sealed overlay (schemas/http/remote-run.ts). */
export const RemoteUploadRequest = Type.Object({ type: Type.Literal('remote.upload.request'), requestId: Id, orgId: Id, actor: Id }, Strict);
export const RemoteUploadResponse = Type.Object(
  { type: Type.Literal('remote.upload.response'), requestId: Id, upload: Type.Optional(RemoteUpload), error: Type.Optional(DashboardError) },
  Strict,
);
/** `svc run remote`: the runs of one fixture from the uploaded overlay. */
export const RemoteRunRequest = Type.Object({ type: Type.Literal('remote.run.request'), requestId: Id, orgId: Id, actor: Id, body: RemoteRunBody, by: Type.Optional(RelayActor) }, Strict);
export const RemoteRunResponse = Type.Object(
  { type: Type.Literal('remote.run.response'), requestId: Id, result: Type.Optional(RemoteRunResult), error: Type.Optional(DashboardError) },
  Strict,
);

/**
 * Run and job metadata for the relay's run index (docs/run-index.md). The orchestrator's records
 * are authoritative: a message carries the run's or job's current record, and the relay keeps the
 * one with the newest `updatedAt` (an older or resent message changes nothing). Fields after
 * `updatedAt` were added in the same protocol version and are optional, so a message of an older
 * orchestrator still passes; a current orchestrator always sends all of them. `orgId`, when
 * present, must be the org of the connection's platform token (the relay refuses the frame
 * otherwise).
 */
export const ExecutionStatus = Type.Object(
  {
    type: Type.Literal('execution.status'),
    runId: Id,
    workflow: Type.String(),
    repository: Type.String(),
    status: Type.String(),
    updatedAt: Type.String({ format: 'date-time' }),
    orgId: Type.Optional(Id),
    reason: Type.Optional(Type.Union([Type.String({ maxLength: MAX_STATUS_REASON_LENGTH }), Type.Null()])),
    eventName: Type.Optional(Type.String()),
    ref: Type.Optional(NullableString),
    sha: Type.Optional(Type.String()),
    actor: Type.Optional(Type.String()),
    createdAt: Type.Optional(Type.String({ format: 'date-time' })),
    startedAt: Type.Optional(NullableTime),
    finishedAt: Type.Optional(NullableTime),
    /** Run lineage (spec "Other records"): the run re-run, the root ancestor, who re-ran it. */
    parentRunId: Type.Optional(Type.Union([Id, Type.Null()])),
    originalRunId: Type.Optional(Type.Union([Id, Type.Null()])),
    triggeredBy: Type.Optional(NullableString),
    cancelledBy: Type.Optional(NullableString),
  },
  Strict,
);
export type ExecutionStatus = Static<typeof ExecutionStatus>;

export const JobStatusForward = Type.Object(
  {
    type: Type.Literal('job.status.forward'),
    runId: Id,
    jobId: Id,
    /** The job's display name (matrix values included). */
    job: Type.String(),
    status: Type.String(),
    updatedAt: Type.String({ format: 'date-time' }),
    orgId: Type.Optional(Id),
    /** `job`, `build`, `hooks`, … (the orchestrator's job kinds). */
    kind: Type.Optional(Type.String()),
    reason: Type.Optional(Type.Union([Type.String({ maxLength: MAX_STATUS_REASON_LENGTH }), Type.Null()])),
    startedAt: Type.Optional(NullableTime),
    finishedAt: Type.Optional(NullableTime),
  },
  Strict,
);
export type JobStatusForward = Static<typeof JobStatusForward>;

// ---- org-level requests of the developer CLI (`svc secrets`, `svc notifications`) ----

/** A secret context as `svc secrets list` shows it: binding and key names, never a value. */
export const OrgSecretContext = Type.Object(
  {
    name: Type.String(),
    /** Test contexts (spec "Authentication" 7): the only ones `svc secrets set` may write. */
    allowLocalExecution: Type.Boolean(),
    repositories: Type.Array(Type.String()),
    orgs: Type.Array(Type.String()),
    bound: Type.Boolean(),
    keys: Type.Array(Type.Object({ key: Type.String(), updatedAt: Type.String() }, Strict)),
  },
  Strict,
);
export type OrgSecretContext = Static<typeof OrgSecretContext>;

export const OrgSecretsListRequest = Type.Object({ type: Type.Literal('org.secrets.list.request'), requestId: Id, orgId: Id }, Strict);
export const OrgSecretsListResponse = Type.Object(
  { type: Type.Literal('org.secrets.list.response'), requestId: Id, contexts: Type.Optional(Type.Array(OrgSecretContext)), error: Type.Optional(DashboardError) },
  Strict,
);

/** The value travels only inside this frame (TLS on the relay link) and is sealed on arrival. */
export const OrgSecretSetRequest = Type.Object(
  {
    type: Type.Literal('org.secret.set.request'),
    requestId: Id,
    orgId: Id,
    actor: Type.String({ maxLength: 200 }),
    context: Type.String({ minLength: 1, maxLength: 100 }),
    key: Type.String({ minLength: 1, maxLength: 128 }),
    value: Type.String({ minLength: 1, maxLength: 65_536 }),
    by: Type.Optional(RelayActor),
  },
  Strict,
);
export const OrgSecretSetResult = Type.Object({ context: Type.String(), key: Type.String(), replaced: Type.Boolean() }, Strict);
export type OrgSecretSetResult = Static<typeof OrgSecretSetResult>;
export const OrgSecretSetResponse = Type.Object(
  { type: Type.Literal('org.secret.set.response'), requestId: Id, result: Type.Optional(OrgSecretSetResult), error: Type.Optional(DashboardError) },
  Strict,
);

const NullableStr = Type.Union([Type.String(), Type.Null()]);

/** One outbound run-status delivery (forge status API or status webhook) and how it went. */
export const NotificationDelivery = Type.Object(
  {
    id: Type.String(),
    runId: Type.String(),
    target: Type.String(),
    providerKind: Type.String(),
    runStatus: Type.String(),
    state: Type.String(),
    conclusion: NullableStr,
    status: Type.String(),
    attempts: Type.Integer({ minimum: 0 }),
    lastError: NullableStr,
    lastStatusCode: Type.Union([Type.Integer(), Type.Null()]),
    deliveredAt: NullableStr,
    createdAt: Type.String(),
  },
  Strict,
);
export type NotificationDelivery = Static<typeof NotificationDelivery>;

/** A pending approval hold: a run (or job, step, context) waiting for `svc approve|reject`. */
export const PendingApproval = Type.Object(
  {
    holdId: Type.String(),
    runId: Type.String(),
    workflow: Type.String(),
    repository: Type.String(),
    level: Type.String(),
    job: NullableStr,
    step: NullableStr,
    context: NullableStr,
    reason: NullableStr,
    expiresAt: NullableStr,
    createdAt: Type.String(),
  },
  Strict,
);
export type PendingApproval = Static<typeof PendingApproval>;

export const OrgNotifications = Type.Object({ deliveries: Type.Array(NotificationDelivery), approvals: Type.Array(PendingApproval) }, Strict);
export type OrgNotifications = Static<typeof OrgNotifications>;

export const MAX_NOTIFICATIONS_LIMIT = 200;
export const DEFAULT_NOTIFICATIONS_LIMIT = 20;
export const OrgNotificationsRequest = Type.Object(
  { type: Type.Literal('org.notifications.request'), requestId: Id, orgId: Id, limit: Type.Integer({ minimum: 1, maximum: MAX_NOTIFICATIONS_LIMIT }) },
  Strict,
);
export const OrgNotificationsResponse = Type.Object(
  { type: Type.Literal('org.notifications.response'), requestId: Id, notifications: Type.Optional(OrgNotifications), error: Type.Optional(DashboardError) },
  Strict,
);

/** Messages the orchestrator sends to the relay. */
export const OrchestratorToRelayMembers = [
  OrchestratorHello,
  WebhookAck,
  SourceRegister,
  SourceDeregister,
  SourceSecrets,
  RunRerunResponse,
  RunCancelResponse,
  RunApproveResponse,
  DashboardPayloadResponse,
  RunShowResponse,
  RunLogsResponse,
  RunArtifactsResponse,
  RunArtifactChunkResponse,
  OrgSecretsListResponse,
  OrgSecretSetResponse,
  OrgNotificationsResponse,
  RemoteUploadResponse,
  RemoteRunResponse,
  DeliveriesListResponse,
  DeliveryPayloadResponse,
  FleetResponse,
  RunDetailResponse,
  RunAttestationResponse,
  AuditRecordResponse,
  AuditListResponse,
  PeopleSyncResponse,
  ExecutionStatus,
  JobStatusForward,
  TestsResponse,
  RunTimelineResponse,
  LogSearchResponse,
] as const;
export const OrchestratorToRelay = Type.Union([...OrchestratorToRelayMembers]);
export type OrchestratorToRelay = Static<typeof OrchestratorToRelay>;

/** Messages the relay sends to an orchestrator. */
export const RelayToOrchestratorMembers = [RelayWelcome, WebhookDeliver, RunRerunRequest, RunCancelRequest, RunApproveRequest, DashboardPayload, RunShowRequest, RunLogsRequest, RunArtifactsRequest, RunArtifactChunkRequest, OrgSecretsListRequest, OrgSecretSetRequest, OrgNotificationsRequest, RemoteUploadRequest, RemoteRunRequest, DeliveriesListRequest, DeliveryPayloadRequest, FleetRequest, RunDetailRequest, RunAttestationRequest, RunTimelineRequest, AuditRecordRequest, AuditListRequest, PeopleSyncRequest, TestsRequest, LogSearchRequest] as const;
export const RelayToOrchestrator = Type.Union([...RelayToOrchestratorMembers]);
export type RelayToOrchestrator = Static<typeof RelayToOrchestrator>;
