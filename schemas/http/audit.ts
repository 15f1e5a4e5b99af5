// The audit trail (docs/audit.md): one record per action that changed something (or was refused
// in a way worth knowing). The record as `svc-admin audit list --json` prints it (one per line),
// as `GET /api/v1/admin/audit` answers it, and as the relay sends its own actions over the link.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;

export const AUDIT_ACTOR_KINDS = ['person', 'token', 'admin-token', 'operator', 'forge', 'system'] as const;
export const AUDIT_OUTCOMES = ['ok', 'refused', 'failed'] as const;
/** `<area>.<verb>` lowercase, e.g. `run.approve`, `config.rollback`, `session.sign_in`. */
export const AUDIT_ACTION_PATTERN = '^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+$';

export const AuditActorKind = Type.Union([Type.Literal('person'), Type.Literal('token'), Type.Literal('admin-token'), Type.Literal('operator'), Type.Literal('forge'), Type.Literal('system')]);
export type AuditActorKind = Static<typeof AuditActorKind>;
export const AuditOutcome = Type.Union([Type.Literal('ok'), Type.Literal('refused'), Type.Literal('failed')]);
export type AuditOutcome = Static<typeof AuditOutcome>;

export const AuditActor = Type.Object(
  {
    kind: AuditActorKind,
    /** Person id, token id, admin token id; '' when the kind has none (operator, forge). */
    id: Type.String({ maxLength: 200 }),
    /** What a reader recognises: the person's name, the token's user, the OS user, the forge login. */
    name: Type.String({ minLength: 1, maxLength: 200 }),
  },
  strict,
);
export type AuditActor = Static<typeof AuditActor>;

/** One action as its writer describes it. */
export const AuditEntry = Type.Object(
  {
    orgId: Type.String({ maxLength: 200 }),
    actor: AuditActor,
    action: Type.String({ pattern: AUDIT_ACTION_PATTERN, maxLength: 100 }),
    target: Type.String({ maxLength: 500 }),
    outcome: AuditOutcome,
    detail: Type.String({ maxLength: 2000 }),
    via: Type.String({ maxLength: 40 }),
  },
  strict,
);
export type AuditEntry = Static<typeof AuditEntry>;

/** A stored record. */
export const AuditEvent = Type.Object(
  {
    id: Type.String(),
    at: Type.String(),
    orgId: Type.String(),
    actor: AuditActor,
    action: Type.String(),
    target: Type.String(),
    outcome: AuditOutcome,
    detail: Type.String(),
    via: Type.String(),
  },
  strict,
);
export type AuditEvent = Static<typeof AuditEvent>;

export const MAX_AUDIT_LIMIT = 1000;

/** Filters of `svc-admin audit list` and `GET /api/v1/admin/audit`. */
export const AuditQuery = Type.Object(
  {
    /** Matches the actor's name or id (exactly, ignoring case). */
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    /** An action (`run.approve`) or an area ending in a dot (`run.`). */
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z][a-z0-9_.-]*$' })),
    org: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    outcome: Type.Optional(AuditOutcome),
    /** ISO 8601 times; `since` inclusive, `until` exclusive. */
    since: Type.Optional(Type.String({ format: 'date-time' })),
    until: Type.Optional(Type.String({ format: 'date-time' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_AUDIT_LIMIT })),
  },
  strict,
);
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditList = Type.Object({ events: Type.Array(AuditEvent) }, strict);
export type AuditList = Static<typeof AuditList>;
