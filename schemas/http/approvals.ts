// Approval decisions over HTTP (docs/cli.md, "svc approve / svc reject"): the body of the relay's
// `POST /orgs/:orgId/runs/:runId/approve|reject` (dashboard) and `POST /v1/orgs/…/approve|reject`
// (`svc approve|reject`), answered with the wire's ApprovalResult; and the holds
// `svc-admin approvals list --json` prints.
import { Type, type Static } from 'typebox';
import { MAX_APPROVAL_COMMENT_LENGTH } from '../wire/relay.ts';

const strict = { additionalProperties: false } as const;
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/** Who decides is the authenticated caller, never a body field: an unknown field is refused. */
export const ApprovalDecisionBody = Type.Object(
  {
    comment: Type.Optional(Type.String({ maxLength: MAX_APPROVAL_COMMENT_LENGTH })),
    /** Decide only the holds of this job (its name in the workflow); default every pending hold. */
    job: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  },
  strict,
);
export type ApprovalDecisionBody = Static<typeof ApprovalDecisionBody>;

/** One approve or reject a hold received, counted or kept with why it was ignored. */
export const ApprovalVoteView = Type.Object(
  {
    actor: Type.String(),
    decision: Type.String(),
    via: Type.String(),
    comment: Type.String(),
    counted: Type.Boolean(),
    ignoredReason: Nullable(Type.String()),
    at: Type.String(),
  },
  strict,
);
export type ApprovalVoteView = Static<typeof ApprovalVoteView>;

/** One approval hold as `svc-admin approvals list --json` prints it. */
export const ApprovalHoldView = Type.Object(
  {
    holdId: Type.String(),
    orgId: Type.String(),
    runId: Type.String(),
    runStatus: Type.String(),
    workflow: Type.String(),
    repository: Type.String(),
    level: Type.String(),
    /** The job's name; null for a workflow-level hold. */
    job: Nullable(Type.String()),
    context: Nullable(Type.String()),
    step: Nullable(Type.String()),
    reason: Nullable(Type.String()),
    status: Type.String(),
    outcome: Nullable(Type.String()),
    decidedBy: Nullable(Type.String()),
    createdAt: Type.String(),
    expiresAt: Nullable(Type.String()),
    votes: Type.Array(ApprovalVoteView),
  },
  strict,
);
export type ApprovalHoldView = Static<typeof ApprovalHoldView>;
