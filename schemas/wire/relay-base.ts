// What the relay protocol's message files share: ids, strictness, nullable fields and the error a
// relayed request is answered with.
import { Type, type Static } from 'typebox';

export const Id = Type.String({ minLength: 1, maxLength: 200 });
export const Strict = { additionalProperties: false } as const;
export const NullableString = Type.Union([Type.String(), Type.Null()]);
export const NullableTime = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

/**
 * A dashboard request the orchestrator could not answer. `status` is the HTTP status the relay
 * answers with (404 unknown run, 409 cannot re-run, 429 inside the re-run cooldown, …).
 */
export const DashboardError = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    status: Type.Integer(),
    /** With 429: seconds until the action is allowed again (the relay's `Retry-After`). */
    retryAfterSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
  },
  Strict,
);
export type DashboardError = Static<typeof DashboardError>;

/**
 * W3C trace context of the span a message continues (docs/tracing.md): on `webhook.deliver` and
 * `job.dispatch`, only when tracing is on and the peer speaks TRACE_PROTOCOL_VERSION.
 */
export const TraceFields = {
  traceparent: Type.Optional(Type.String({ pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' })),
  tracestate: Type.Optional(Type.String({ maxLength: 512 })),
};
