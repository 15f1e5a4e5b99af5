// Agent <-> step runner, over the Node IPC channel of the child process the sandbox spawns.
// Workflow code runs only in the runner; the agent process never imports it. The runner asks
// the agent for anything that needs the orchestrator (`api.request`), and reports steps, log
// lines and the job result. The agent masks secrets in every log line it forwards.
import { Type, type Static } from 'typebox';

const Strict = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, maxLength: 200 });
const Time = Type.String({ format: 'date-time' });
const StepStatusValue = Type.Union([
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('skipped'),
  Type.Literal('cancelled'),
]);

export const RunnerStart = Type.Object(
  {
    type: Type.Literal('runner.start'),
    /** Absolute path of the workflow module in the restored or checked-out tree. */
    workflowFile: Type.String({ minLength: 1 }),
    exportName: Type.String({ minLength: 1 }),
    workflowName: Type.String(),
    jobName: Type.String(),
    /** Working directory of the job (the checkout). */
    workspace: Type.String({ minLength: 1 }),
    matrix: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    event: Type.Unknown(),
    changedFiles: Type.Union([Type.Array(Type.String()), Type.Null()]),
    env: Type.Record(Type.String(), Type.String()),
    secrets: Type.Record(Type.String(), Type.String()),
    /** Outputs of the jobs this job needs, by job name. */
    needs: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
    inputs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    isTestRun: Type.Boolean(),
    /** Evaluate the workflow-level filter and rules before the job (first job of a run). */
    evaluateWorkflowFilter: Type.Boolean(),
    /** Default hook timeout (spec: 5 minutes); a hook's own `timeout` wins. */
    hookTimeoutMs: Type.Integer({ minimum: 1 }),
    jobTimeoutMs: Type.Optional(Type.Integer({ minimum: 1 })),
    /**
     * Run the workflow-level hooks (onSuccess/onFailure/onCancel, cleanup) after this job's own
     * hooks: the orchestrator sets it on the run's last job. Absent means false.
     */
    workflowHooks: Type.Optional(Type.Boolean()),
  },
  Strict,
);
export type RunnerStart = Static<typeof RunnerStart>;

export const RunnerCancel = Type.Object(
  { type: Type.Literal('runner.cancel'), reason: Type.String(), force: Type.Boolean() },
  Strict,
);

export const ApiResponse = Type.Object(
  {
    type: Type.Literal('api.response'),
    requestId: Id,
    result: Type.Optional(Type.Unknown()),
    error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() }, Strict)),
  },
  Strict,
);

export const AgentToRunnerMembers = [RunnerStart, RunnerCancel, ApiResponse] as const;
export type AgentToRunner = Static<(typeof AgentToRunnerMembers)[number]>;

export const RunnerReady = Type.Object({ type: Type.Literal('runner.ready'), pid: Type.Integer() }, Strict);

export const RunnerStepStatus = Type.Object(
  {
    type: Type.Literal('runner.step'),
    index: Type.Integer({ minimum: 0 }),
    name: Type.String(),
    status: StepStatusValue,
    at: Time,
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
  },
  Strict,
);

export const RunnerLog = Type.Object(
  {
    type: Type.Literal('runner.log'),
    /** Step name, `(setup)` before the first step, or `(hook) <name>` for hooks. */
    step: Type.String(),
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr'), Type.Literal('system')]),
    /** One line, without its newline. */
    text: Type.String({ maxLength: 65_536 }),
    at: Time,
  },
  Strict,
);

/** A value the agent must mask from now on (secret outputs, minted tokens). */
export const RunnerSecret = Type.Object({ type: Type.Literal('runner.secret'), value: Type.String({ minLength: 1 }) }, Strict);

export const RUNNER_APIS = ['emit', 'oidc.token', 'cache.restore', 'cache.save', 'artifacts.upload', 'attest'] as const;
export const ApiRequest = Type.Object(
  {
    type: Type.Literal('api.request'),
    requestId: Id,
    api: Type.Unsafe<(typeof RUNNER_APIS)[number]>(Type.Union(RUNNER_APIS.map((a) => Type.Literal(a)))),
    args: Type.Unknown(),
  },
  Strict,
);

// `args` and `result` of each `api.request`, by api. Paths are as the workflow gave them,
// relative to the job's workspace unless absolute; the agent resolves them, tars and transfers.
const Paths = Type.Array(Type.String({ minLength: 1 }), { minItems: 1 });
export const RunnerApiShapes = {
  emit: {
    args: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }), payload: Type.Optional(Type.Unknown()) }, Strict),
    result: Type.Object({ deliveryId: Type.Optional(Type.String()) }, Strict),
  },
  'oidc.token': {
    args: Type.Object({ audience: Type.String({ minLength: 1 }) }, Strict),
    result: Type.Union([
      Type.Object({ token: Type.String({ minLength: 1 }), expiresIn: Type.Number({ minimum: 0 }) }, Strict),
      Type.Object({ deferred: Type.Literal(true), code: Type.String({ minLength: 1 }) }, Strict),
    ]),
  },
  'cache.restore': {
    args: Type.Object({ key: Type.String({ minLength: 1 }), restoreKeys: Type.Optional(Type.Array(Type.String({ minLength: 1 }))), paths: Paths }, Strict),
    result: Type.Object({ hit: Type.Boolean(), matchedKey: Type.Optional(Type.String()) }, Strict),
  },
  'cache.save': {
    args: Type.Object({ key: Type.String({ minLength: 1 }), paths: Paths }, Strict),
    result: Type.Object({ saved: Type.Boolean() }, Strict),
  },
  'artifacts.upload': {
    args: Type.Object({ name: Type.String({ minLength: 1 }), paths: Paths }, Strict),
    result: Type.Object({ name: Type.String(), sizeBytes: Type.Integer({ minimum: 0 }) }, Strict),
  },
  attest: {
    args: Type.Object(
      {
        subjects: Type.Array(Type.Object({ path: Type.String({ minLength: 1 }) }, Strict), { minItems: 1 }),
        predicate: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      Strict,
    ),
    result: Type.Object({ bundlePaths: Type.Array(Type.String()), deferred: Type.Boolean() }, Strict),
  },
} as const;

export const RunnerResult = Type.Object(
  {
    type: Type.Literal('runner.result'),
    status: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled'), Type.Literal('skipped')]),
    /** Compound when hooks failed too: `cancelled; onCancel hook failed: …`. */
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
    outputs: Type.Record(Type.String(), Type.Unknown()),
    steps: Type.Array(
      Type.Object(
        { name: Type.String(), status: StepStatusValue, startedAt: Type.Optional(Time), finishedAt: Type.Optional(Time), reason: Type.Optional(Type.String()) },
        Strict,
      ),
    ),
  },
  Strict,
);

export const RunnerToAgentMembers = [RunnerReady, RunnerStepStatus, RunnerLog, RunnerSecret, ApiRequest, RunnerResult] as const;
export type RunnerToAgent = Static<(typeof RunnerToAgentMembers)[number]>;
