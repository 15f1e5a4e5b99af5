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

/** Why a pseudo-job runs: the workflow filter, the workflow hooks, or a dynamic generator. */
export const JobRole = Type.Union([Type.Literal('filter'), Type.Literal('hooks'), Type.Literal('generate')]);
export type JobRole = Static<typeof JobRole>;

/** The run's outcome the workflow hooks observe (`ctx.outcome`); set on the `hooks` pseudo-job. */
export const WorkflowOutcome = Type.Object(
  {
    status: Type.Union([Type.Literal('success'), Type.Literal('failed'), Type.Literal('cancelled')]),
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
    /** First failed job and, when known, its failed step (`failedStep`). */
    failedJob: Type.Optional(Type.String()),
    failedStep: Type.Optional(Type.String()),
    /** Milliseconds since the run was created. */
    duration: Type.Integer({ minimum: 0 }),
  },
  Strict,
);
export type WorkflowOutcome = Static<typeof WorkflowOutcome>;

/**
 * A dynamic generator in the workflow definition. With role `generate` the runner evaluates it
 * and reports what it produced; on a generated job the runner re-evaluates it to find the
 * job's closures (generators must be deterministic for one run).
 */
export const GeneratorRef = Type.Object(
  {
    /** Name of the dynamic lock job entry. */
    entry: Type.String({ minLength: 1, maxLength: 200 }),
    /** Dynamic reference (`jobs.deploy.generate`, `jobs.test.matrix`) for resolveDefinitionRef. */
    ref: Type.String({ minLength: 1, maxLength: 1000 }),
    kind: Type.Union([Type.Literal('jobs'), Type.Literal('matrix')]),
    /** Outputs of the jobs the generator's entry needs (what `ctx.jobOutputs` answers in it). */
    needs: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
  },
  Strict,
);
export type GeneratorRef = Static<typeof GeneratorRef>;

/** What a generator produced: job entries (or per-job errors), or a matrix's axes. */
export const GeneratedJobs = Type.Object(
  {
    jobs: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 200 }),
            /** The job's lock entry, as the compiler writes it for a lock job. */
            entry: Type.Optional(Type.Unknown()),
            /** Why this job could not be described; the orchestrator fails it on the run. */
            error: Type.Optional(Type.String({ maxLength: 10_000 })),
          },
          Strict,
        ),
        { maxItems: 256 },
      ),
    ),
    matrix: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  Strict,
);
export type GeneratedJobs = Static<typeof GeneratedJobs>;

/** A concurrency group key as the filter pseudo-job evaluated it (trimmed). */
export const GroupKey = Type.String({ minLength: 1, maxLength: 200 });

const GroupJobName = Type.String({ minLength: 1, maxLength: 100 });

/**
 * Role `filter`: the evaluated concurrency group keys of the workflow and of its static jobs, by
 * job name. Only declared groups appear (a workflow or job without `group` gets the
 * orchestrator's default key); present only when at least one key was evaluated.
 */
export const ConcurrencyGroups = Type.Object(
  {
    workflow: Type.Optional(GroupKey),
    // TypeBox turns a string key schema into `patternProperties: { '^.*$' }` and drops its
    // length bounds; `propertyNames` is what enforces them.
    jobs: Type.Optional(Type.Record(GroupJobName, GroupKey, { propertyNames: GroupJobName })),
  },
  Strict,
);
export type ConcurrencyGroups = Static<typeof ConcurrencyGroups>;

/** One `ctx.setEnv` or `ctx.addPath` call, as made; replayed in order when a job resumes. */
export const EnvEffect = Type.Union([
  Type.Object({ setEnv: Type.String({ minLength: 1, maxLength: 1000 }), value: Type.String() }, Strict),
  Type.Object({ addPath: Type.String({ minLength: 1 }) }, Strict),
]);
export type EnvEffect = Static<typeof EnvEffect>;

/**
 * A step that ended (its body's result; its own hooks may still be running), sent as
 * `runner.checkpoint` and kept by a static agent beside its in-flight record, so that a
 * restarted agent resumes the job after it (docs/agent.md "When an agent restarts mid-job").
 */
export const StepCheckpoint = Type.Object(
  {
    index: Type.Integer({ minimum: 0 }),
    name: Type.String({ minLength: 1 }),
    status: Type.Union([Type.Literal('completed'), Type.Literal('failed'), Type.Literal('skipped'), Type.Literal('cancelled')]),
    startedAt: Type.Optional(Time),
    finishedAt: Type.Optional(Time),
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
    /** With `completed`: the step's outputs, secret outputs included (the record is sealed). */
    outputs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** Which of `outputs` came from `ctx.setSecretOutput` (masked again after a resume). */
    secretOutputs: Type.Optional(Type.Array(Type.String())),
    /** setEnv/addPath calls since the previous checkpoint (this step's, its beforeStep hook's). */
    effects: Type.Array(EnvEffect),
  },
  Strict,
);
export type StepCheckpoint = Static<typeof StepCheckpoint>;

/** How far a job got under a previous runner: what `runner.start.resume` carries. */
export const JobProgress = Type.Object(
  {
    /** The previous runner's workspace: recorded PATH entries and values under it move to the new one. */
    workspace: Type.String({ minLength: 1 }),
    /** Steps that ended, in order. */
    steps: Type.Array(StepCheckpoint, { maxItems: 10_000 }),
    /** The step that had reported `running` and no checkpoint when the previous runner stopped. */
    running: Type.Optional(Type.Object({ index: Type.Integer({ minimum: 0 }), name: Type.String({ minLength: 1 }) }, Strict)),
  },
  Strict,
);
export type JobProgress = Static<typeof JobProgress>;

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
    /**
     * A pseudo-job: `filter` evaluates only the workflow filter and rules; `hooks` runs only the
     * workflow hooks for `workflowOutcome`; `generate` evaluates `generator`. Absent: a job.
     */
    role: Type.Optional(JobRole),
    workflowOutcome: Type.Optional(WorkflowOutcome),
    generator: Type.Optional(GeneratorRef),
    /**
     * Steps held for an approval (by index and name): before each the runner asks the agent
     * (`step.approval`) and waits for the decision. Absent: no step is held.
     */
    approvalSteps: Type.Optional(Type.Array(Type.Object({ index: Type.Integer({ minimum: 0 }), name: Type.String({ minLength: 1 }) }, Strict))),
    /**
     * The agent restarted while it ran this job: the steps in `resume.steps` are not run again
     * (their outputs and env effects are restored), and `resume.running` is run again only
     * when it has a `check` (docs/agent.md "When an agent restarts mid-job").
     */
    resume: Type.Optional(JobProgress),
    /**
     * The agent's job span (docs/tracing.md): each step runs with TRACEPARENT (and TRACESTATE) of a
     * step span under it, named back in `runner.step`. Absent: not traced.
     */
    traceparent: Type.Optional(Type.String({ pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' })),
    tracestate: Type.Optional(Type.String({ maxLength: 512 })),
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

/**
 * The exit code of the command that failed a step (docs/run-states.md "Retries"): sent only when a
 * `ctx.$` command exited non-zero and that failed the step, never for a timeout, a cancel, a signal
 * or a thrown error. Above 2^31 - 1 (a Windows status code) it is not reported.
 */
export const CommandExitCode = Type.Integer({ minimum: 1, maximum: 2_147_483_647 });

export const RunnerStepStatus = Type.Object(
  {
    type: Type.Literal('runner.step'),
    index: Type.Integer({ minimum: 0 }),
    name: Type.String(),
    status: StepStatusValue,
    at: Time,
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
    /** With `failed`: the failing command's exit code (CommandExitCode). */
    exitCode: Type.Optional(CommandExitCode),
    /** With `running` in a traced job: the step span's traceparent, as the step's TRACEPARENT. */
    traceparent: Type.Optional(Type.String({ pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' })),
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

export const RUNNER_APIS = ['emit', 'oidc.token', 'cache.restore', 'cache.save', 'artifacts.upload', 'artifacts.download', 'attest', 'step.approval', 'tests.collect'] as const;
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
    args: Type.Object(
      { name: Type.String({ minLength: 1, maxLength: 1000 }), paths: Paths, retentionDays: Type.Optional(Type.Integer({ minimum: 1 })) },
      Strict,
    ),
    result: Type.Object(
      { name: Type.String(), sizeBytes: Type.Integer({ minimum: 0 }), digest: Type.String(), fileCount: Type.Integer({ minimum: 0 }) },
      Strict,
    ),
  },
  'artifacts.download': {
    args: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 1000 }),
        /** Directory to extract into; absent: the workspace root. */
        destination: Type.Optional(Type.String({ minLength: 1 })),
        from: Type.Optional(Type.Union([Type.Literal('current'), Type.Literal('upstream')])),
      },
      Strict,
    ),
    result: Type.Object({ path: Type.String(), digest: Type.String(), fileCount: Type.Integer({ minimum: 0 }) }, Strict),
  },
  attest: {
    args: Type.Object(
      {
        subjects: Type.Array(Type.Object({ path: Type.String({ minLength: 1 }) }, Strict), { minItems: 1 }),
        predicate: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      },
      Strict,
    ),
    result: Type.Object(
      {
        /** Bundles written next to their subjects (deferred subjects have none yet). */
        bundlePaths: Type.Array(Type.String()),
        /** True when at least one subject was deferred. */
        deferred: Type.Boolean(),
        /** One entry per subject, in order (every agent that signs sends it). */
        attestations: Type.Optional(Type.Array(
          Type.Object(
            {
              /** Workspace-relative path of the subject (the in-toto subject name). */
              subject: Type.String(),
              sha256: Type.String(),
              attestationId: Type.String(),
              statementHash: Type.String(),
              deferred: Type.Boolean(),
              /** Why signing was deferred (`unavailable`, `key_unavailable`, `signer_failed`, `key_revoked`). */
              code: Type.Optional(Type.String()),
              bundlePath: Type.Optional(Type.String()),
              /** Run artifact holding the bundle; absent when the orchestrator has no storage. */
              artifact: Type.Optional(Type.String()),
              /** `<artifact>.sigstore.json`: the same signature as a Sigstore bundle v0.3. */
              sigstoreBundlePath: Type.Optional(Type.String()),
              /** Run artifact holding the Sigstore bundle; absent without storage. */
              sigstoreArtifact: Type.Optional(Type.String()),
            },
            Strict,
          ),
        )),
      },
      Strict,
    ),
  },
  // Not a step API: the runner itself asks before a held step; the agent answers once decided.
  'step.approval': {
    args: Type.Object({ index: Type.Integer({ minimum: 0 }), name: Type.String({ minLength: 1, maxLength: 200 }) }, Strict),
    result: Type.Object(
      {
        status: Type.Union([Type.Literal('approved'), Type.Literal('rejected'), Type.Literal('expired'), Type.Literal('cancelled')]),
        reason: Type.String(),
      },
      Strict,
    ),
  },
  // Not a step API: after a step, the runner hands the agent the result files it declared or
  // reported; the agent parses them in its own process and reports them (docs/test-results.md).
  'tests.collect': {
    args: Type.Object(
      {
        index: Type.Integer({ minimum: 0 }),
        name: Type.String({ minLength: 1, maxLength: 200 }),
        /** Globs (relative to the workspace) from the job's and the step's `testResults`. */
        patterns: Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 40 }),
        /** Paths the step reported (ctx.tests.report, the SVC_TEST_RESULTS file). */
        paths: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), { maxItems: 1000 }),
        /** The step failed with a non-zero command exit (ShellCommandError), nothing else. */
        exitFailure: Type.Boolean(),
      },
      Strict,
    ),
    result: Type.Object(
      {
        files: Type.Integer({ minimum: 0 }),
        total: Type.Integer({ minimum: 0 }),
        failed: Type.Integer({ minimum: 0 }),
        quarantinedFailed: Type.Integer({ minimum: 0 }),
        waived: Type.Boolean(),
        problems: Type.Array(Type.String()),
      },
      Strict,
    ),
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
        {
          name: Type.String(),
          status: StepStatusValue,
          startedAt: Type.Optional(Time),
          finishedAt: Type.Optional(Time),
          reason: Type.Optional(Type.String()),
          exitCode: Type.Optional(CommandExitCode),
        },
        Strict,
      ),
    ),
    /** With `failed`: the exit code of the command that failed the job's failed step (CommandExitCode). */
    exitCode: Type.Optional(CommandExitCode),
    /** Role `generate`: what the generator produced. */
    generated: Type.Optional(GeneratedJobs),
    /** Role `filter`, with `completed`: the evaluated concurrency group keys. */
    concurrencyGroups: Type.Optional(ConcurrencyGroups),
  },
  Strict,
);

/** A step ended: what a restarted agent needs to resume after it (see StepCheckpoint). */
export const RunnerCheckpoint = Type.Object({ type: Type.Literal('runner.checkpoint'), step: StepCheckpoint }, Strict);

export const RunnerToAgentMembers = [RunnerReady, RunnerStepStatus, RunnerLog, RunnerSecret, ApiRequest, RunnerResult, RunnerCheckpoint] as const;
export type RunnerToAgent = Static<(typeof RunnerToAgentMembers)[number]>;
