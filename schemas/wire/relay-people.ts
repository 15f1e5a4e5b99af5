// Relay → orchestrator messages about people (issue 42; docs/audit.md, docs/run-control.md):
// - who made a relayed change (`by` on re-run, cancel, approve, remote run and secret set), so the
//   orchestrator's audit record says person or token;
// - the teams (provider groups) and roles of the person who approves, so team and role clauses
//   are decided on what the relay's people store says;
// - the relay's own audit records (sign-in, sign-out, tokens, roles), sent from its outbox;
// - the people directory (person, forge login, groups, roles), so a `/svc approve` comment on the
//   forge maps to a person on the orchestrator.
import { Type, type Static } from 'typebox';
import { AuditEvent } from '../http/audit.ts';
import { DashboardError, Id, Strict } from './relay-base.ts';

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Names = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 500 });

/** Who acted at the relay: a signed-in person, a personal access token, or the relay itself. */
export const RelayActor = Type.Object(
  {
    kind: Type.Union([Type.Literal('person'), Type.Literal('token'), Type.Literal('system')]),
    /** Person id or token id. */
    id: Type.String({ maxLength: 200 }),
    /** The person's login or the token's user. */
    name: Name,
  },
  Strict,
);
export type RelayActor = Static<typeof RelayActor>;

/** The person deciding an approval, as the relay's people store has them now. */
export const ApproverPrincipals = Type.Object(
  {
    personId: Id,
    name: Name,
    /** Provider groups (a clause's `teams` name these). */
    teams: Names,
    /** Effective roles in the org (viewer, developer, approver, admin). */
    roles: Names,
  },
  Strict,
);
export type ApproverPrincipals = Static<typeof ApproverPrincipals>;

export const MAX_AUDIT_BATCH = 100;

export const RelayAuditRecord = Type.Object(
  {
    /** Chosen at the relay: a batch sent again after a lost answer is stored once. */
    id: Type.String({ pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' }),
    /** When it happened at the relay. */
    at: Type.String({ format: 'date-time' }),
    actor: RelayActor,
    action: Type.String({ pattern: '^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+$', maxLength: 100 }),
    target: Type.String({ maxLength: 500 }),
    outcome: Type.Union([Type.Literal('ok'), Type.Literal('refused'), Type.Literal('failed')]),
    detail: Type.String({ maxLength: 2000 }),
  },
  Strict,
);
export type RelayAuditRecord = Static<typeof RelayAuditRecord>;

export const AuditRecordRequest = Type.Object(
  { type: Type.Literal('audit.record.request'), requestId: Id, orgId: Id, records: Type.Array(RelayAuditRecord, { minItems: 1, maxItems: MAX_AUDIT_BATCH }) },
  Strict,
);
export const AuditRecordResponse = Type.Object(
  { type: Type.Literal('audit.record.response'), requestId: Id, stored: Type.Optional(Type.Integer({ minimum: 0 })), error: Type.Optional(DashboardError) },
  Strict,
);

/** One person as the orchestrator needs them for `/svc approve` comments. */
export const DirectoryPerson = Type.Object(
  {
    personId: Id,
    name: Name,
    /** The provider kind the login belongs to (`github`: a forge login). */
    provider: Type.String({ minLength: 1, maxLength: 100 }),
    login: Name,
    teams: Names,
    roles: Names,
    disabled: Type.Boolean(),
  },
  Strict,
);
export type DirectoryPerson = Static<typeof DirectoryPerson>;

export const MAX_DIRECTORY_BATCH = 500;

/** Upserts (people are never deleted at the relay, only disabled); the whole org at connect, one person after a change. */
export const PeopleSyncRequest = Type.Object(
  { type: Type.Literal('people.sync.request'), requestId: Id, orgId: Id, people: Type.Array(DirectoryPerson, { maxItems: MAX_DIRECTORY_BATCH }) },
  Strict,
);
export const PeopleSyncResponse = Type.Object(
  { type: Type.Literal('people.sync.response'), requestId: Id, stored: Type.Optional(Type.Integer({ minimum: 0 })), error: Type.Optional(DashboardError) },
  Strict,
);

/** The dashboard's audit page (admins): the org's records, newest first, filtered. */
export const AuditListRequest = Type.Object(
  {
    type: Type.Literal('audit.list.request'),
    requestId: Id,
    orgId: Id,
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-z][a-z0-9_.-]*$' })),
    outcome: Type.Optional(Type.Union([Type.Literal('ok'), Type.Literal('refused'), Type.Literal('failed')])),
    limit: Type.Integer({ minimum: 1, maximum: 500 }),
  },
  Strict,
);
export const AuditListResponse = Type.Object(
  { type: Type.Literal('audit.list.response'), requestId: Id, events: Type.Optional(Type.Array(AuditEvent)), error: Type.Optional(DashboardError) },
  Strict,
);
