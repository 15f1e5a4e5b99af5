// Orchestrator <-> agent WebSocket protocol (`GET {base_url}/v1/agents/connect`). The agent
// authenticates with `Authorization: Bearer <agent token>` when `agentAuth` is `token`, then
// sends `agent.register`. Objects are strict: a sender still using a removed field is refused.
//
// Where the spec names a cache field `type` (`{ type: 'source' | 'dep', key }`) the message
// carries it as `cacheType`, because `type` is the message discriminator.
import { Type, type Static } from 'typebox';
import { AttestationBundle, SigstoreBundle } from '../identity.ts';
import { TraceFields } from './relay-base.ts';
import { CommandExitCode, ConcurrencyGroups, GeneratedJobs, GeneratorRef, JobRole, WorkflowOutcome } from './runner.ts';

const Strict = { additionalProperties: false } as const;
const Id = Type.String({ minLength: 1, maxLength: 200 });
const Time = Type.String({ format: 'date-time' });
const ErrorBody = Type.Object({ code: Type.String(), message: Type.String() }, Strict);

export const JobRunStatus = Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('cancelled')]);
export type JobRunStatus = Static<typeof JobRunStatus>;

export const StepRunStatus = Type.Union([
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('skipped'),
  Type.Literal('cancelled'),
]);
export type StepRunStatus = Static<typeof StepRunStatus>;

export const AgentRegister = Type.Object(
  {
    type: Type.Literal('agent.register'),
    protocolVersion: Type.Integer(),
    agentId: Id,
    /** Custom labels; the orchestrator adds the auto labels (OS, arch, role). */
    labels: Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 200 }),
    os: Type.String(),
    arch: Type.String(),
    /** Ephemeral agents run one job and go; static agents get a recovery window on disconnect. */
    ephemeral: Type.Boolean(),
    sandboxes: Type.Array(Type.String()),
    /**
     * Sandboxes installed in the agent that cannot run here, with why (`docker`: no engine
     * answers): the orchestrator names them when a job needs one and no agent offers it.
     */
    unavailableSandboxes: Type.Optional(
      Type.Array(
        Type.Object({ sandbox: Type.String({ minLength: 1, maxLength: 100 }), missing: Type.String({ maxLength: 200 }), message: Type.String({ maxLength: 1000 }) }, Strict),
        { maxItems: 20 },
      ),
    ),
    sdkVersion: Type.String(),
    inFlightJobs: Type.Array(Type.Object({ jobId: Id, status: JobRunStatus }, Strict)),
  },
  Strict,
);
export type AgentRegister = Static<typeof AgentRegister>;

export const AgentRegistered = Type.Object(
  { type: Type.Literal('agent.registered'), agentId: Id, labels: Type.Array(Type.String()), protocolVersion: Type.Integer() },
  Strict,
);

export const SourceAuth = Type.Object(
  {
    /** How to fetch the repository: a git URL plus an optional short-lived credential. */
    cloneUrl: Type.String(),
    token: Type.Optional(Type.String()),
    username: Type.Optional(Type.String()),
  },
  Strict,
);

/** One step of a job, by its index in the job's steps and its name. */
export const StepRef = Type.Object({ index: Type.Integer({ minimum: 0 }), name: Type.String({ minLength: 1, maxLength: 200 }) }, Strict);

/**
 * The dependency install's private registries and secret environment (docs/agent.md "Private
 * registries"), resolved at dispatch from the job's released secrets and given to the `npm ci`
 * of `.svc/` alone, never to steps. A `token` or `value` absent: the secret was not released to
 * this job (its context skipped, or the key missing); the install fails naming it.
 */
export const JobInstall = Type.Object(
  {
    registries: Type.Array(
      Type.Object(
        {
          url: Type.String({ minLength: 1 }),
          scope: Type.Optional(Type.String({ pattern: '^@[a-z0-9][a-z0-9._-]*$' })),
          alwaysAuth: Type.Boolean(),
          /** `<context>:<KEY>`, named in messages. */
          tokenSecret: Type.String({ minLength: 1 }),
          token: Type.Optional(Type.String({ minLength: 1 })),
        },
        Strict,
      ),
      { maxItems: 100 },
    ),
    /** `name`: the variable set on the install (the key part of `secret`). */
    env: Type.Array(
      Type.Object({ name: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), secret: Type.String({ minLength: 1 }), value: Type.Optional(Type.String()) }, Strict),
      { maxItems: 100 },
    ),
  },
  Strict,
);
export type JobInstall = Static<typeof JobInstall>;

export const JobDispatch = Type.Object(
  {
    type: Type.Literal('job.dispatch'),
    jobId: Id,
    runId: Id,
    attempt: Type.Integer({ minimum: 1 }),
    jobConfig: Type.Object(
      {
        workflow: Type.String(),
        job: Type.String(),
        /** Matrix combination of this job instance, when the job has a matrix. */
        matrix: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
        sha: Type.String(),
        ref: Type.Union([Type.String(), Type.Null()]),
        repository: Type.String(),
        contentHash: Type.String(),
        /** Outputs of the jobs this job needs, by job name. */
        needs: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown())),
        event: Type.Unknown(),
        changedFiles: Type.Union([Type.Array(Type.String()), Type.Null()]),
        env: Type.Record(Type.String(), Type.String()),
        secrets: Type.Optional(Type.Record(Type.String(), Type.String())),
        timeoutMs: Type.Optional(Type.Integer({ minimum: 1 })),
        gracePeriodSeconds: Type.Optional(Type.Number({ minimum: 0 })),
        container: Type.Optional(Type.Unknown()),
        build: Type.Optional(Type.Boolean()),
        /**
         * The lock job's checkout settings. With a cached source the agent still checks the
         * repository out at `sha` (the project the steps work on) and overlays the cached `.svc/`;
         * absent or disabled: only the cached workflow tree. `submodules`: the commit's submodules
         * (recursively, at their recorded commits); `lfs`: LFS files with their real content
         * (pointers otherwise). Absent means false.
         */
        checkout: Type.Optional(
          Type.Object(
            { enabled: Type.Boolean(), depth: Type.Integer({ minimum: 0 }), submodules: Type.Optional(Type.Boolean()), lfs: Type.Optional(Type.Boolean()) },
            { additionalProperties: true },
          ),
        ),
        isTestRun: Type.Boolean(),
        /**
         * `svc run remote`: the developer's working-tree overlay, applied on the checkout at `sha`
         * (docs/run-remote.md). `url` is a pre-signed GET of the sealed box; `key` (base64) its
         * AES-256-GCM key.
         */
        overlay: Type.Optional(Type.Object({ url: Type.String({ minLength: 1 }), key: Type.String({ minLength: 44, maxLength: 44 }) }, Strict)),
        /** A scheduling pseudo-job (`svc:filter`, `svc:hooks`, `svc:generate:<entry>`); absent for jobs. */
        role: Type.Optional(JobRole),
        /** Role `hooks`: the run's outcome the workflow hooks observe. */
        workflowOutcome: Type.Optional(WorkflowOutcome),
        /** Role `generate`: the generator to evaluate; on a generated job: the generator that made it. */
        generator: Type.Optional(GeneratorRef),
        /**
         * Steps whose lock entry holds them for an approval that applies to this run
         * (docs/run-control.md "Step holds"): the runner asks `approval.step.request` before each.
         */
        approvalSteps: Type.Optional(Type.Array(StepRef, { maxItems: 1000 })),
        /** Private registries and secret environment of the dependency install (JobInstall). */
        install: Type.Optional(JobInstall),
      },
      Strict,
    ),
    sourceTarUrl: Type.Union([Type.String(), Type.Null()]),
    sourceTarDigest: Type.Union([Type.String(), Type.Null()]),
    depsUrl: Type.Union([Type.String(), Type.Null()]),
    depsHash: Type.Union([Type.String(), Type.Null()]),
    sourceAuth: SourceAuth,
    workflowAuth: Type.Union([SourceAuth, Type.Null()]),
    /** `shared` for trusted refs; `iso/<run>` for untrusted ones (user-cache scope). */
    cacheRefScope: Type.String(),
    /** The dispatch span's trace context: the agent's job span is its child (docs/tracing.md). */
    ...TraceFields,
  },
  Strict,
);
export type JobDispatch = Static<typeof JobDispatch>;

export const StepResult = Type.Object(
  {
    name: Type.String(),
    status: StepRunStatus,
    startedAt: Type.Optional(Time),
    finishedAt: Type.Optional(Time),
    reason: Type.Optional(Type.String()),
    /** Protocol 5: with `failed`, the failing command's exit code (see JobStatus `exitCode`). */
    exitCode: Type.Optional(CommandExitCode),
  },
  Strict,
);

/**
 * One set-up phase of a job on the agent (`source_restore`, `checkout`, `checkout.fetch`, `deps`,
 * …) with wall-clock ISO times in milliseconds: the dashboard's timeline. The name is a pattern,
 * not a list, so a newer agent's phase does not make an older orchestrator refuse the status. A
 * phase that failed still ends: at the failure.
 */
export const JobPhase = Type.Object(
  { name: Type.String({ pattern: '^[a-z][a-z_]{0,39}(\\.[a-z][a-z_]{0,39})?$' }), startedAt: Time, finishedAt: Time },
  Strict,
);
export type JobPhase = Static<typeof JobPhase>;
/** At most this many phases on one `job.status`. */
export const MAX_JOB_PHASES = 50;
/** The first protocol whose orchestrators accept `phases` on `job.status` (agent/connection.ts drops them for an older one). */
export const JOB_PHASES_PROTOCOL = 5;

export const JobStatus = Type.Object(
  {
    type: Type.Literal('job.status'),
    jobId: Id,
    status: JobRunStatus,
    steps: Type.Array(StepResult),
    startedAt: Type.Optional(Time),
    finishedAt: Type.Optional(Time),
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
    outputs: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    /** With `completed`: the job's rules (or, on `svc:filter`, the workflow filter) said no; nothing ran. */
    skipped: Type.Optional(Type.Literal(true)),
    /** With `completed` on a generator pseudo-job: what the generator produced. */
    generated: Type.Optional(GeneratedJobs),
    /** With `completed` on `svc:filter`: the run's evaluated concurrency group keys (workflow, jobs by name). */
    concurrencyGroups: Type.Optional(ConcurrencyGroups),
    /** Protocol 5: the set-up phases ended so far (JobPhase), on `running` once set-up ends and on the terminal status. */
    phases: Type.Optional(Type.Array(JobPhase, { maxItems: MAX_JOB_PHASES })),
    /**
     * Protocol 5: with `failed`, the exit code of the `ctx.$` command that failed the job's failed
     * step (not for a timeout, cancel, signal or thrown error); a job retry policy's `exitCodes`
     * reads it. An agent sends it only to an orchestrator that registered it at protocol 5 or later.
     */
    exitCode: Type.Optional(CommandExitCode),
  },
  Strict,
);
export type JobStatus = Static<typeof JobStatus>;

export const JobContext = Type.Object(
  { type: Type.Literal('job.context'), jobId: Id, nodeVersion: Type.String(), os: Type.String(), arch: Type.String(), sandbox: Type.String() },
  Strict,
);

export const StepStatus = Type.Object(
  {
    type: Type.Literal('step.status'),
    jobId: Id,
    index: Type.Integer({ minimum: 0 }),
    name: Type.String(),
    status: StepRunStatus,
    at: Time,
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
    /** Protocol 5: with `failed`, the failing command's exit code (see JobStatus `exitCode`). */
    exitCode: Type.Optional(CommandExitCode),
  },
  Strict,
);

export const LogChunk = Type.Object(
  {
    type: Type.Literal('log.chunk'),
    jobId: Id,
    /** Monotonic per job; lets the orchestrator drop a chunk resent after a reconnect. */
    seq: Type.Integer({ minimum: 0 }),
    lines: Type.Array(
      Type.Object(
        {
          at: Time,
          /** Step name, or `(setup)` for output before the first step. */
          step: Type.String(),
          stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr'), Type.Literal('system')]),
          text: Type.String({ maxLength: 65_536 }),
        },
        Strict,
      ),
      { maxItems: 5_000 },
    ),
  },
  Strict,
);

export const JobCancel = Type.Object({ type: Type.Literal('job.cancel'), jobId: Id, reason: Type.String(), force: Type.Boolean() }, Strict);

export const EventEmit = Type.Object(
  { type: Type.Literal('event.emit'), jobId: Id, requestId: Id, eventName: Type.String({ minLength: 1, maxLength: 200 }), payload: Type.Unknown(), target: Type.Optional(Type.String()) },
  Strict,
);
export const EventEmitResponse = Type.Object(
  { type: Type.Literal('event.emit.response'), requestId: Id, deliveryId: Type.Optional(Id), error: Type.Optional(ErrorBody) },
  Strict,
);

const CacheType = Type.Union([Type.Literal('source'), Type.Literal('dep')]);
export const CacheUploadRequest = Type.Object({ type: Type.Literal('cache.upload.request'), jobId: Id, requestId: Id, cacheType: CacheType, key: Type.String({ minLength: 1 }) }, Strict);
export const CacheUploadResponse = Type.Object({ type: Type.Literal('cache.upload.response'), requestId: Id, url: Type.Optional(Type.String()), error: Type.Optional(ErrorBody) }, Strict);
export const CacheUploadComplete = Type.Object(
  { type: Type.Literal('cache.upload.complete'), jobId: Id, cacheType: CacheType, key: Type.String({ minLength: 1 }), depsHash: Type.Optional(Type.String()) },
  Strict,
);

export const CacheUserRestoreRequest = Type.Object(
  { type: Type.Literal('cache.user.restore.request'), jobId: Id, requestId: Id, key: Type.String({ minLength: 1, maxLength: 512 }), restoreKeys: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 20 })) },
  Strict,
);
export const CacheUserRestoreResponse = Type.Object(
  { type: Type.Literal('cache.user.restore.response'), requestId: Id, hit: Type.Boolean(), matchedKey: Type.Optional(Type.String()), downloadUrl: Type.Optional(Type.String()), tarHash: Type.Optional(Type.String()), error: Type.Optional(ErrorBody) },
  Strict,
);
export const CacheUserSaveRequest = Type.Object({ type: Type.Literal('cache.user.save.request'), jobId: Id, requestId: Id, key: Type.String({ minLength: 1, maxLength: 512 }) }, Strict);
export const CacheUserSaveResponse = Type.Object(
  { type: Type.Literal('cache.user.save.response'), requestId: Id, uploadUrl: Type.Optional(Type.String()), skip: Type.Boolean(), error: Type.Optional(ErrorBody) },
  Strict,
);
export const CacheUserSaveComplete = Type.Object(
  { type: Type.Literal('cache.user.save.complete'), jobId: Id, requestId: Id, key: Type.String({ minLength: 1, maxLength: 512 }), tarHash: Type.String(), sizeBytes: Type.Integer({ minimum: 0 }) },
  Strict,
);

// Run artifacts (ctx.artifacts, docs/artifacts.md). Upload: `artifact.upload.request` (the packed
// tarball's digest, size and file count) → a pre-signed PUT to a temporary object; the agent PUTs,
// then `artifact.commit.request` (same requestId) → the committed artifact. Download:
// `artifact.download.request` → a pre-signed GET and the digest the agent must check.
const ArtifactName = Type.String({ minLength: 1, maxLength: 128 });
const ArtifactDigest = Type.String({ pattern: '^sha256:[0-9a-f]{64}$' });
export const ArtifactInfo = Type.Object(
  {
    name: ArtifactName,
    digest: ArtifactDigest,
    sizeBytes: Type.Integer({ minimum: 0 }),
    fileCount: Type.Integer({ minimum: 0 }),
    runId: Id,
    createdAt: Time,
    expiresAt: Time,
  },
  Strict,
);
export type ArtifactInfo = Static<typeof ArtifactInfo>;
export const ArtifactUploadRequest = Type.Object(
  {
    type: Type.Literal('artifact.upload.request'),
    jobId: Id,
    requestId: Id,
    name: ArtifactName,
    digest: ArtifactDigest,
    sizeBytes: Type.Integer({ minimum: 0 }),
    fileCount: Type.Integer({ minimum: 0 }),
    /** Shorter than the configured retention only; absent: the configured retention. */
    retentionDays: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  Strict,
);
export const ArtifactUploadResponse = Type.Object(
  { type: Type.Literal('artifact.upload.response'), requestId: Id, uploadUrl: Type.Optional(Type.String()), error: Type.Optional(ErrorBody) },
  Strict,
);
export const ArtifactCommitRequest = Type.Object({ type: Type.Literal('artifact.commit.request'), jobId: Id, requestId: Id }, Strict);
export const ArtifactCommitResponse = Type.Object(
  { type: Type.Literal('artifact.commit.response'), requestId: Id, artifact: Type.Optional(ArtifactInfo), error: Type.Optional(ErrorBody) },
  Strict,
);
export const ArtifactDownloadRequest = Type.Object(
  {
    type: Type.Literal('artifact.download.request'),
    jobId: Id,
    requestId: Id,
    name: ArtifactName,
    /** `current`: this run only; `upstream`: the run whose completion triggered this one; absent: current, then upstream. */
    from: Type.Optional(Type.Union([Type.Literal('current'), Type.Literal('upstream')])),
  },
  Strict,
);
export const ArtifactDownloadResponse = Type.Object(
  { type: Type.Literal('artifact.download.response'), requestId: Id, artifact: Type.Optional(ArtifactInfo), downloadUrl: Type.Optional(Type.String()), error: Type.Optional(ErrorBody) },
  Strict,
);

export const OidcTokenRequest = Type.Object({ type: Type.Literal('oidc.token.request'), jobId: Id, requestId: Id, audience: Type.String({ minLength: 1, maxLength: 1000 }) }, Strict);
export const OidcTokenResponse = Type.Object(
  {
    type: Type.Literal('oidc.token.response'),
    requestId: Id,
    token: Type.Optional(Type.String()),
    expiresIn: Type.Optional(Type.Integer({ minimum: 1 })),
    deferred: Type.Optional(Type.Literal(true)),
    code: Type.Optional(Type.String()),
  },
  Strict,
);

// ctx.attestProvenance (docs/provenance.md): the agent hashes the workspace file itself and asks
// the orchestrator to attest it for the job; the answer is the signed bundle, or a deferral whose
// frozen statement the orchestrator signs later (same attestationId).
export const AttestationCreateRequest = Type.Object(
  {
    type: Type.Literal('attestation.create.request'),
    jobId: Id,
    requestId: Id,
    /** Subject: the workspace-relative path and the SHA-256 (hex) of the file's bytes. */
    artifact: Type.Object({ name: Type.String({ minLength: 1, maxLength: 1000 }), sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }) }, Strict),
    /** The step's own predicate fields (recorded as externalParameters.stepParameters). */
    parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  Strict,
);
export const AttestationCreateResponse = Type.Object(
  {
    type: Type.Literal('attestation.create.response'),
    requestId: Id,
    attestationId: Type.Optional(Id),
    statementHash: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
    /** `<artifact base name>.svc.json`. */
    fileName: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    bundle: Type.Optional(AttestationBundle),
    /** The same signature as a Sigstore bundle v0.3 (`<artifact base name>.sigstore.json`). */
    sigstoreBundle: Type.Optional(SigstoreBundle),
    deferred: Type.Optional(Type.Literal(true)),
    code: Type.Optional(Type.String()),
    error: Type.Optional(ErrorBody),
  },
  Strict,
);

/** Where a step hold stands: `pending` until a decider acts; the others are final. */
export const StepHoldStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('approved'),
  Type.Literal('rejected'),
  Type.Literal('expired'),
  Type.Literal('cancelled'),
]);
export type StepHoldStatus = Static<typeof StepHoldStatus>;

/**
 * Before a held step: open its hold (the first time) and say where it stands. Asking again (a
 * reconnect, a redispatch, a periodic re-check) finds the same hold, so a decision is never lost.
 */
export const ApprovalStepRequest = Type.Object(
  { type: Type.Literal('approval.step.request'), jobId: Id, requestId: Id, index: Type.Integer({ minimum: 0 }), name: Type.String({ minLength: 1, maxLength: 200 }) },
  Strict,
);
export const ApprovalStepResponse = Type.Object(
  {
    type: Type.Literal('approval.step.response'),
    requestId: Id,
    status: Type.Optional(StepHoldStatus),
    /** Pending: what the hold waits for; final: its outcome (`approved by alice`, `rejected by bob: not now`). */
    reason: Type.Optional(Type.String({ maxLength: 10_000 })),
    error: Type.Optional(ErrorBody),
  },
  Strict,
);
/** Pushed when a step hold is decided (approved, rejected, expired, cancelled). */
export const ApprovalStepDecision = Type.Object(
  {
    type: Type.Literal('approval.step.decision'),
    jobId: Id,
    index: Type.Integer({ minimum: 0 }),
    status: StepHoldStatus,
    reason: Type.String({ maxLength: 10_000 }),
  },
  Strict,
);

// Test results (docs/test-results.md): after a step, the agent parses the result files the job
// or step declared (JUnit XML, TAP) and sends what it found, in batches, to the orchestrator, which
// stores them and answers which failures are quarantined. `final` marks the step's last batch:
// with it come the step's counts and whether its failure came from the tests alone. A new type:
// an agent that predates it never sends it, and nothing else in the protocol changed.
export const TestCaseStatus = Type.Union([Type.Literal('passed'), Type.Literal('failed'), Type.Literal('skipped'), Type.Literal('errored')]);
export type TestCaseStatus = Static<typeof TestCaseStatus>;
export const TestCase = Type.Object(
  {
    suite: Type.String({ maxLength: 500 }),
    name: Type.String({ minLength: 1, maxLength: 1000 }),
    file: Type.Optional(Type.String({ maxLength: 1000 })),
    status: TestCaseStatus,
    durationMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647 })),
    /** Failure or error message, masked, clipped at 4 KiB. */
    message: Type.Optional(Type.String({ maxLength: 4096 })),
    /** The first lines of the failure's output (stack, diagnostics), masked, clipped at 8 KiB. */
    output: Type.Optional(Type.String({ maxLength: 8192 })),
  },
  Strict,
);
export type TestCase = Static<typeof TestCase>;
export const TestsReportRequest = Type.Object(
  {
    type: Type.Literal('tests.report.request'),
    jobId: Id,
    requestId: Id,
    step: StepRef,
    results: Type.Array(TestCase, { maxItems: 5_000 }),
    /** The step's last batch: the orchestrator sums the step and decides the waiver. */
    final: Type.Boolean(),
    /** With `final`: the step failed with a non-zero command exit (not a timeout, cancel or exception). */
    exitFailure: Type.Optional(Type.Boolean()),
    /** With `final`: why a result file was not (fully) read, one line each (refused, too big, malformed). */
    problems: Type.Optional(Type.Array(Type.String({ maxLength: 1000 }), { maxItems: 100 })),
  },
  Strict,
);
export const TestsReportResponse = Type.Object(
  {
    type: Type.Literal('tests.report.response'),
    requestId: Id,
    /** With `final`: the step's failed and errored tests, and how many of them are quarantined. */
    failed: Type.Optional(Type.Integer({ minimum: 0 })),
    quarantinedFailed: Type.Optional(Type.Integer({ minimum: 0 })),
    /** With `final`: the step's failure came only from quarantined tests; it does not fail the job. */
    waived: Type.Optional(Type.Boolean()),
    error: Type.Optional(ErrorBody),
  },
  Strict,
);

export const ProtocolError = Type.Object({ type: Type.Literal('protocol.error'), error: ErrorBody, requestId: Type.Optional(Id) }, Strict);

export const AgentToOrchestratorMembers = [
  AgentRegister,
  JobStatus,
  JobContext,
  StepStatus,
  LogChunk,
  EventEmit,
  CacheUploadRequest,
  CacheUploadComplete,
  CacheUserRestoreRequest,
  CacheUserSaveRequest,
  CacheUserSaveComplete,
  OidcTokenRequest,
  AttestationCreateRequest,
  ArtifactUploadRequest,
  ArtifactCommitRequest,
  ArtifactDownloadRequest,
  ApprovalStepRequest,
  TestsReportRequest,
] as const;
export const AgentToOrchestrator = Type.Union([...AgentToOrchestratorMembers]);
export type AgentToOrchestrator = Static<typeof AgentToOrchestrator>;

export const OrchestratorToAgentMembers = [
  AgentRegistered,
  JobDispatch,
  JobCancel,
  EventEmitResponse,
  CacheUploadResponse,
  CacheUserRestoreResponse,
  CacheUserSaveResponse,
  OidcTokenResponse,
  AttestationCreateResponse,
  ArtifactUploadResponse,
  ArtifactCommitResponse,
  ArtifactDownloadResponse,
  ApprovalStepResponse,
  ApprovalStepDecision,
  TestsReportResponse,
  ProtocolError,
] as const;
export const OrchestratorToAgent = Type.Union([...OrchestratorToAgentMembers]);
export type OrchestratorToAgent = Static<typeof OrchestratorToAgent>;
