// Relay <-> orchestrator WebSocket protocol. The orchestrator dials the relay
// (`GET {platform_url}/v1/orchestrators/connect`, `Authorization: Bearer <platform.token>`),
// sends `orchestrator.hello`, and from then on both sides exchange these messages as JSON text
// frames. Webhook bodies travel base64-encoded so the orchestrator verifies signatures over the
// exact bytes the provider sent.
import { Type, type Static } from 'typebox';

export const PROTOCOL_VERSION = 3;
export const MIN_PROTOCOL_VERSION = 3;
/** RFC 6455 1002: the spec's WS_CLOSE_PROTOCOL_ERROR. */
export const WS_CLOSE_PROTOCOL_ERROR = 1002;
/** Application close codes (4000-4999 are free for applications). */
export const WS_CLOSE_UNAUTHORIZED = 4001;
export const WS_CLOSE_REFUSED = 4003;

const Id = Type.String({ minLength: 1, maxLength: 200 });
const Strict = { additionalProperties: false } as const;

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

export const RunRerunRequest = Type.Object({ type: Type.Literal('run.rerun.request'), requestId: Id, runId: Id, triggeredBy: Type.String() }, Strict);
export const RunRerunResponse = Type.Object(
  { type: Type.Literal('run.rerun.response'), requestId: Id, newRunId: Type.Optional(Id), error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String(), status: Type.Integer() }, Strict)) },
  Strict,
);
export const RunCancelRequest = Type.Object({ type: Type.Literal('run.cancel.request'), requestId: Id, runId: Id, cancelledBy: Type.String() }, Strict);
export const RunCancelResponse = Type.Object(
  { type: Type.Literal('run.cancel.response'), requestId: Id, cancelledJobs: Type.Optional(Type.Integer({ minimum: 0 })), error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String(), status: Type.Integer() }, Strict)) },
  Strict,
);
export const DashboardPayload = Type.Object({ type: Type.Literal('dashboard.payload'), requestId: Id, runId: Id }, Strict);
export const DashboardPayloadResponse = Type.Object(
  { type: Type.Literal('dashboard.payload.response'), requestId: Id, payload: Type.Optional(Type.Unknown()), error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String(), status: Type.Integer() }, Strict)) },
  Strict,
);
export const ExecutionStatus = Type.Object(
  {
    type: Type.Literal('execution.status'),
    runId: Id,
    workflow: Type.String(),
    repository: Type.String(),
    status: Type.String(),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  Strict,
);
export const JobStatusForward = Type.Object(
  {
    type: Type.Literal('job.status.forward'),
    runId: Id,
    jobId: Id,
    job: Type.String(),
    status: Type.String(),
    updatedAt: Type.String({ format: 'date-time' }),
  },
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
  DashboardPayloadResponse,
  ExecutionStatus,
  JobStatusForward,
] as const;
export const OrchestratorToRelay = Type.Union([...OrchestratorToRelayMembers]);
export type OrchestratorToRelay = Static<typeof OrchestratorToRelay>;

/** Messages the relay sends to an orchestrator. */
export const RelayToOrchestratorMembers = [RelayWelcome, WebhookDeliver, RunRerunRequest, RunCancelRequest, DashboardPayload] as const;
export const RelayToOrchestrator = Type.Union([...RelayToOrchestratorMembers]);
export type RelayToOrchestrator = Static<typeof RelayToOrchestrator>;
