// The one HTTP error body, for every route of the relay and the orchestrator.
import { Type, type Static } from 'typebox';

export const ErrorIssue = Type.Object(
  {
    /** Dot path inside the request part that failed (`jobs.build.runsOn`); empty for the root. */
    path: Type.String(),
    message: Type.String(),
  },
  { additionalProperties: false },
);
export type ErrorIssue = Static<typeof ErrorIssue>;

export const ErrorResponse = Type.Object(
  {
    error: Type.Object(
      {
        /** Stable `SVC_ERR_<AREA>_<WHAT>` code to match on. */
        code: Type.String({ pattern: '^SVC_ERR_[A-Z0-9_]+$' }),
        /** What went wrong and what to do, for a person. */
        message: Type.String(),
        /** Present on request validation errors: every failing path. */
        issues: Type.Optional(Type.Array(ErrorIssue)),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type ErrorResponse = Static<typeof ErrorResponse>;
