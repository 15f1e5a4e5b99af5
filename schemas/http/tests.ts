// The relay's test-result routes (docs/test-results.md): what `svc tests …` and the dashboard send.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Repo = Type.String({ minLength: 1, maxLength: 300 });

/** `GET /v1/orgs/:orgId/tests`: one view, named by `view`. */
export const TestsViewQuery = Type.Object(
  {
    view: Type.Union([Type.Literal('failed'), Type.Literal('flaky'), Type.Literal('history'), Type.Literal('quarantine')]),
    repository: Type.Optional(Repo),
    suite: Type.Optional(Type.String({ maxLength: 500 })),
    /** With `history`: the test's name. */
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    /** With `quarantine`: entries that left quarantine too. */
    all: Type.Optional(Type.Boolean()),
  },
  strict,
);
export type TestsViewQuery = Static<typeof TestsViewQuery>;

/** `POST /v1/orgs/:orgId/tests/quarantine`: put a test into quarantine or take it out. */
export const QuarantineChangeBody = Type.Object(
  {
    action: Type.Union([Type.Literal('add'), Type.Literal('remove')]),
    /** Absent: every repository of the org. */
    repository: Type.Optional(Repo),
    suite: Type.String({ maxLength: 500 }),
    name: Type.String({ minLength: 1, maxLength: 1000 }),
    reason: Type.String({ minLength: 1, maxLength: 1000 }),
  },
  strict,
);
export type QuarantineChangeBody = Static<typeof QuarantineChangeBody>;

export const DEFAULT_TESTS_LIMIT = 50;
