// A user's own personal access tokens over HTTP (`svc pat create|list|revoke`, docs/login.md) and
// the device authorization answers the CLI reads (`svc login`, RFC 8628 field names).
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/** `POST /v1/pats`: the owner is the caller, never a body field. */
export const PatCreateBody = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    /** Whole days until the token stops working; none: until revoked. */
    expiresInDays: Type.Optional(Type.Integer({ minimum: 1, maximum: 366 })),
    /** Role names the token is narrowed to (docs/roles.md); none: all of its owner's roles. */
    scopes: Type.Optional(Type.Array(Type.Enum(['viewer', 'developer', 'approver', 'admin']), { minItems: 1, maxItems: 4, uniqueItems: true })),
  },
  strict,
);
export type PatCreateBody = Static<typeof PatCreateBody>;

/** One token as listed: never its value. */
export const PatView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  createdAt: Type.String(),
  lastUsedAt: Nullable(Type.String()),
  expiresAt: Nullable(Type.String()),
  revokedAt: Nullable(Type.String()),
});
export type PatView = Static<typeof PatView>;

export const PatList = Type.Object({ tokens: Type.Array(PatView) });
export type PatList = Static<typeof PatList>;

/** `POST /v1/pats` → 201: the token value, shown this once. */
export const PatCreated = Type.Object({
  id: Type.String(),
  name: Type.String(),
  orgId: Type.String(),
  user: Type.String(),
  token: Type.String(),
  createdAt: Type.String(),
  expiresAt: Nullable(Type.String()),
});
export type PatCreated = Static<typeof PatCreated>;

export const PatRevoked = Type.Object({ id: Type.String(), alreadyRevoked: Type.Boolean() });
export type PatRevoked = Static<typeof PatRevoked>;

/** `POST /v1/device/code` (RFC 8628 3.2). */
export const DeviceCodeAnswer = Type.Object({
  device_code: Type.String({ minLength: 1 }),
  user_code: Type.String({ minLength: 1 }),
  verification_uri: Type.String({ minLength: 1 }),
  verification_uri_complete: Type.String({ minLength: 1 }),
  expires_in: Type.Integer({ minimum: 1 }),
  interval: Type.Integer({ minimum: 1 }),
});
export type DeviceCodeAnswer = Static<typeof DeviceCodeAnswer>;

/** `POST /v1/device/token` once approved. */
export const DeviceTokenAnswer = Type.Object({
  access_token: Type.String({ minLength: 1 }),
  token_type: Type.String(),
  org: Type.String(),
  user: Type.String(),
  token_id: Type.String(),
  expires_at: Nullable(Type.String()),
  /** A person's token (signed in through a provider): renew it with POST /v1/token/refresh (docs/login.md). */
  refresh_token: Type.Optional(Type.String({ minLength: 1 })),
});
export type DeviceTokenAnswer = Static<typeof DeviceTokenAnswer>;

/** `POST /v1/device/token` refusals (RFC 8628 3.5 error names). */
export const DeviceTokenError = Type.Object({
  error: Type.String(),
  error_description: Type.Optional(Type.String()),
  code: Type.Optional(Type.String()),
  interval: Type.Optional(Type.Integer({ minimum: 1 })),
});
export type DeviceTokenError = Static<typeof DeviceTokenError>;
