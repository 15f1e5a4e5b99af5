// Test results over the relay (docs/test-results.md): `svc tests …`, the dashboard's Tests tab,
// test history, flaky and quarantine pages, and quarantine changes, as one request type whose
// `query` says which view or change. Part of the relay protocol (schemas/wire/relay.ts lists it).
import { Type, type Static } from 'typebox';
import { DashboardError, Id, Strict } from './relay-base.ts';

const Repo = Type.String({ minLength: 1, maxLength: 300 });
const Suite = Type.String({ maxLength: 500 });
const Name = Type.String({ minLength: 1, maxLength: 1000 });
const Limit = Type.Integer({ minimum: 1, maximum: 1000 });
const Reason = Type.String({ minLength: 1, maxLength: 1000 });
const Time = Type.String({ format: 'date-time' });
const Status = Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('skipped'), Type.Literal('errored')]);

export const TestsQuery = Type.Union([
  Type.Object({ view: Type.Literal('run'), runId: Id }, Strict),
  Type.Object({ view: Type.Literal('failed'), repository: Type.Optional(Repo), limit: Limit }, Strict),
  Type.Object({ view: Type.Literal('flaky'), repository: Type.Optional(Repo), limit: Limit }, Strict),
  Type.Object({ view: Type.Literal('history'), repository: Type.Optional(Repo), suite: Type.Optional(Suite), name: Name, limit: Limit }, Strict),
  Type.Object({ view: Type.Literal('quarantine'), repository: Type.Optional(Repo), includeRemoved: Type.Boolean() }, Strict),
  Type.Object({ view: Type.Literal('quarantine.add'), repository: Type.Optional(Repo), suite: Suite, name: Name, reason: Reason }, Strict),
  Type.Object({ view: Type.Literal('quarantine.remove'), repository: Type.Optional(Repo), suite: Suite, name: Name, reason: Reason }, Strict),
]);
export type TestsQuery = Static<typeof TestsQuery>;

export const TestResultView = Type.Object(
  {
    runId: Type.String(),
    jobId: Type.String(),
    jobName: Type.String(),
    attempt: Type.Integer(),
    stepIndex: Type.Integer(),
    stepName: Type.String(),
    repository: Type.String(),
    sha: Type.String(),
    suite: Type.String(),
    name: Type.String(),
    file: Type.Union([Type.String(), Type.Null()]),
    status: Status,
    durationMs: Type.Union([Type.Integer(), Type.Null()]),
    message: Type.Union([Type.String(), Type.Null()]),
    output: Type.Union([Type.String(), Type.Null()]),
    quarantined: Type.Boolean(),
    at: Time,
  },
  Strict,
);
export type TestResultView = Static<typeof TestResultView>;

export const TestCounts = Type.Object(
  { total: Type.Integer(), passed: Type.Integer(), failed: Type.Integer(), skipped: Type.Integer(), errored: Type.Integer(), quarantined: Type.Integer() },
  Strict,
);
export type TestCounts = Static<typeof TestCounts>;

export const TestStepView = Type.Object(
  {
    jobId: Type.String(),
    jobName: Type.String(),
    attempt: Type.Integer(),
    stepIndex: Type.Integer(),
    stepName: Type.String(),
    counts: TestCounts,
    exitFailure: Type.Boolean(),
    failedByTests: Type.Boolean(),
    waived: Type.Boolean(),
    problems: Type.Array(Type.String()),
  },
  Strict,
);
export type TestStepView = Static<typeof TestStepView>;

/** A run's tests: counts, the steps that reported, and the cases, failures first (capped). */
export const RunTestsView = Type.Object(
  {
    runId: Type.String(),
    repository: Type.String(),
    sha: Type.String(),
    counts: TestCounts,
    steps: Type.Array(TestStepView),
    results: Type.Array(TestResultView),
    /** Cases not in `results` (passed and skipped ones past the cap). */
    omitted: Type.Integer({ minimum: 0 }),
  },
  Strict,
);
export type RunTestsView = Static<typeof RunTestsView>;

export const FlakyView = Type.Object(
  {
    repository: Type.String(),
    suite: Type.String(),
    name: Type.String(),
    sha: Type.String(),
    passedRuns: Type.Array(Type.String()),
    failedRuns: Type.Array(Type.String()),
    firstSeenAt: Time,
    lastSeenAt: Time,
    quarantined: Type.Boolean(),
  },
  Strict,
);
export type FlakyView = Static<typeof FlakyView>;

export const QuarantineView = Type.Object(
  {
    id: Type.String(),
    repository: Type.Union([Type.String(), Type.Null()]),
    suite: Type.String(),
    name: Type.String(),
    reason: Type.String(),
    addedBy: Type.String(),
    addedAt: Time,
    removedBy: Type.Union([Type.String(), Type.Null()]),
    removedReason: Type.Union([Type.String(), Type.Null()]),
    removedAt: Type.Union([Time, Type.Null()]),
  },
  Strict,
);
export type QuarantineView = Static<typeof QuarantineView>;

export const TestHistoryView = Type.Object(
  {
    repository: Type.Union([Type.String(), Type.Null()]),
    suite: Type.Union([Type.String(), Type.Null()]),
    name: Type.String(),
    /** Newest first. */
    results: Type.Array(
      Type.Object(
        {
          runId: Type.String(),
          jobId: Type.String(),
          repository: Type.String(),
          suite: Type.String(),
          sha: Type.String(),
          attempt: Type.Integer(),
          status: Status,
          durationMs: Type.Union([Type.Integer(), Type.Null()]),
          quarantined: Type.Boolean(),
          message: Type.Union([Type.String(), Type.Null()]),
          at: Time,
        },
        Strict,
      ),
    ),
    /** Failed or errored over passed, failed and errored, in `results`; null when none ran. */
    failureRate: Type.Union([Type.Number(), Type.Null()]),
    medianDurationMs: Type.Union([Type.Number(), Type.Null()]),
    flaky: Type.Array(FlakyView),
    quarantine: Type.Array(QuarantineView),
  },
  Strict,
);
export type TestHistoryView = Static<typeof TestHistoryView>;

export const TestsAnswer = Type.Union([
  Type.Object({ view: Type.Literal('run'), run: RunTestsView }, Strict),
  Type.Object({ view: Type.Literal('failed'), results: Type.Array(TestResultView) }, Strict),
  Type.Object({ view: Type.Literal('flaky'), tests: Type.Array(FlakyView) }, Strict),
  Type.Object({ view: Type.Literal('history'), history: TestHistoryView }, Strict),
  Type.Object({ view: Type.Literal('quarantine'), entries: Type.Array(QuarantineView) }, Strict),
  Type.Object({ view: Type.Literal('quarantine.add'), entry: QuarantineView }, Strict),
  Type.Object({ view: Type.Literal('quarantine.remove'), entry: QuarantineView }, Strict),
]);
export type TestsAnswer = Static<typeof TestsAnswer>;

export const TestsRequest = Type.Object({ type: Type.Literal('tests.request'), requestId: Id, orgId: Id, actor: Type.String({ minLength: 1, maxLength: 300 }), query: TestsQuery }, Strict);
export const TestsResponse = Type.Object({ type: Type.Literal('tests.response'), requestId: Id, answer: Type.Optional(TestsAnswer), error: Type.Optional(DashboardError) }, Strict);
