// The developer CLI's org routes on the relay (kernel/relay/dashboard/org-routes.ts):
// `svc orchestrators`, `svc endpoints`, `svc secrets`, `svc notifications`.
import { Type, type Static } from 'typebox';
import { MAX_NOTIFICATIONS_LIMIT, OrgNotifications, OrgSecretContext, OrgSecretSetResult } from '../wire/relay.ts';

const strict = { additionalProperties: false } as const;

/** One orchestrator connected to the relay for the org. */
export const ConnectedOrchestrator = Type.Object(
  {
    orchestratorId: Type.String(),
    connectedAt: Type.String({ format: 'date-time' }),
    lastSeenAt: Type.String({ format: 'date-time' }),
    /** From its hello; null for an orchestrator that sends none. */
    version: Type.Union([Type.String(), Type.Null()]),
  },
  strict,
);
export const OrchestratorList = Type.Object({ orchestrators: Type.Array(ConnectedOrchestrator) }, strict);
export type OrchestratorList = Static<typeof OrchestratorList>;

/** One webhook ingest endpoint the relay serves for the org (a source an orchestrator registered). */
export const IngestEndpoint = Type.Object(
  {
    providerKind: Type.String(),
    routingKey: Type.String(),
    sourceId: Type.Union([Type.String(), Type.Null()]),
    /** The path on the relay: `/webhook/<org>/<provider>` or `/webhook/<org>/generic/<source id>`. */
    path: Type.String(),
    /** hmac, bearer, ip-allowlist or none, as the orchestrator reported it; null when unknown. */
    signatureMode: Type.Union([Type.String(), Type.Null()]),
    registeredBy: Type.String(),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  strict,
);
export const EndpointList = Type.Object({ endpoints: Type.Array(IngestEndpoint) }, strict);
export type EndpointList = Static<typeof EndpointList>;

export const SecretList = Type.Object({ contexts: Type.Array(OrgSecretContext) }, strict);
export type SecretList = Static<typeof SecretList>;

export const SecretSetBody = Type.Object({ value: Type.String({ minLength: 1, maxLength: 65_536 }) }, strict);
export type SecretSetBody = Static<typeof SecretSetBody>;
export { OrgSecretSetResult as SecretSetResult };

export const NotificationsQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_NOTIFICATIONS_LIMIT })) }, strict);
export type NotificationsQuery = Static<typeof NotificationsQuery>;
export { OrgNotifications as Notifications };
