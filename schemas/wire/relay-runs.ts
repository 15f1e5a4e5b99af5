// The run views the relay asks an orchestrator for (`svc runs show|logs|artifacts|download` and the
// dashboard's run pages): run detail with its jobs, steps, job outputs and re-run lineage, log
// pages, artifacts, and provenance attestations with their verification. Part of the relay
// protocol (schemas/wire/relay.ts re-exports it); apart only to keep each file readable.
import { Type, type Static } from 'typebox';
import { AttestationBundle } from '../identity.ts';
import { DashboardError, Id, NullableString, NullableTime, Strict } from './relay-base.ts';

/** One step of a job as `svc runs show` prints it. */
export const RunStepView = Type.Object(
  { index: Type.Integer({ minimum: 0 }), name: Type.String(), status: Type.String(), reason: NullableString, startedAt: NullableTime, finishedAt: NullableTime },
  Strict,
);
export type RunStepView = Static<typeof RunStepView>;

export const RunJobView = Type.Object(
  {
    jobId: Id,
    name: Type.String(),
    /** Unique within the run (matrix instances carry their values). */
    displayName: Type.String(),
    kind: Type.String(),
    status: Type.String(),
    reason: NullableString,
    agentId: NullableString,
    needs: Type.Array(Type.String()),
    runsOn: Type.Array(Type.String()),
    attempts: Type.Integer({ minimum: 0 }),
    queuedAt: NullableTime,
    startedAt: NullableTime,
    finishedAt: NullableTime,
    steps: Type.Array(RunStepView),
  },
  Strict,
);
export type RunJobView = Static<typeof RunJobView>;

/** Run detail for `svc runs show` (the orchestrator's records; lineage per spec "Other records"). */
export const RunView = Type.Object(
  {
    runId: Id,
    orgId: Id,
    status: Type.String(),
    reason: NullableString,
    workflow: Type.String(),
    repository: Type.String(),
    workflowRepository: Type.String(),
    workflowSha: Type.String(),
    sha: Type.String(),
    ref: NullableString,
    eventName: Type.String(),
    actor: Type.String(),
    trustTier: Type.String(),
    deliveryId: NullableString,
    parentRunId: NullableString,
    originalRunId: NullableString,
    triggeredBy: NullableString,
    cancelledBy: NullableString,
    createdAt: Type.String({ format: 'date-time' }),
    startedAt: NullableTime,
    finishedAt: NullableTime,
    durationMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()]),
    jobs: Type.Array(RunJobView),
  },
  Strict,
);
export type RunView = Static<typeof RunView>;

export const RunShowRequest = Type.Object({ type: Type.Literal('run.show.request'), requestId: Id, orgId: Id, runId: Id }, Strict);
export const RunShowResponse = Type.Object({ type: Type.Literal('run.show.response'), requestId: Id, run: Type.Optional(RunView), error: Type.Optional(DashboardError) }, Strict);

/** One log line as the agent sent it (already masked), with the job it belongs to. */
export const RunLogLine = Type.Object(
  {
    jobId: Id,
    /** The job's display name. */
    job: Type.String(),
    seq: Type.Integer({ minimum: 0 }),
    at: Type.String(),
    /** Step name, or `(setup)` for output before the first step. */
    step: Type.String(),
    stream: Type.String(),
    text: Type.String(),
  },
  Strict,
);
export type RunLogLine = Static<typeof RunLogLine>;

/** Max length of a log cursor (opaque to clients: pass back what the last page returned). */
export const MAX_LOG_CURSOR_LENGTH = 20_000;

export const RunLogsPage = Type.Object(
  {
    runId: Id,
    /** The run's status when the page was read. */
    status: Type.String(),
    /** The run has ended: once `more` is false too, no line will follow. */
    terminal: Type.Boolean(),
    lines: Type.Array(RunLogLine),
    /** Pass as `after` for the lines that follow. */
    cursor: Type.String({ maxLength: MAX_LOG_CURSOR_LENGTH }),
    /** More lines are already stored: ask again at once. */
    more: Type.Boolean(),
  },
  Strict,
);
export type RunLogsPage = Static<typeof RunLogsPage>;

export const RunLogsRequest = Type.Object(
  { type: Type.Literal('run.logs.request'), requestId: Id, orgId: Id, runId: Id, after: Type.Optional(Type.String({ maxLength: MAX_LOG_CURSOR_LENGTH })) },
  Strict,
);
export const RunLogsResponse = Type.Object({ type: Type.Literal('run.logs.response'), requestId: Id, page: Type.Optional(RunLogsPage), error: Type.Optional(DashboardError) }, Strict);

/** One artifact of a run (`svc runs artifacts`, docs/artifacts.md). */
export const RunArtifact = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    /** `sha256:<hex>` of the stored tarball. */
    digest: Type.String({ pattern: '^sha256:[0-9a-f]{64}$' }),
    sizeBytes: Type.Integer({ minimum: 0 }),
    fileCount: Type.Integer({ minimum: 0 }),
    runId: Id,
    createdAt: Type.String({ format: 'date-time' }),
    expiresAt: Type.String({ format: 'date-time' }),
  },
  Strict,
);
export type RunArtifact = Static<typeof RunArtifact>;

export const RunArtifactsRequest = Type.Object({ type: Type.Literal('run.artifacts.request'), requestId: Id, orgId: Id, runId: Id }, Strict);
export const RunArtifactsResponse = Type.Object(
  { type: Type.Literal('run.artifacts.response'), requestId: Id, artifacts: Type.Optional(Type.Array(RunArtifact)), error: Type.Optional(DashboardError) },
  Strict,
);

/** Bytes of one artifact from `offset` (`svc runs download`): chunks small enough for one relay frame. */
export const RunArtifactChunk = Type.Object(
  {
    artifact: RunArtifact,
    offset: Type.Integer({ minimum: 0 }),
    /** Base64 of at most 2 MiB. */
    data: Type.String(),
    /** This chunk ends the artifact. */
    done: Type.Boolean(),
  },
  Strict,
);
export type RunArtifactChunk = Static<typeof RunArtifactChunk>;
export const RunArtifactChunkRequest = Type.Object(
  { type: Type.Literal('run.artifact.chunk.request'), requestId: Id, orgId: Id, runId: Id, name: Type.String({ minLength: 1, maxLength: 128 }), offset: Type.Integer({ minimum: 0 }) },
  Strict,
);
export const RunArtifactChunkResponse = Type.Object(
  { type: Type.Literal('run.artifact.chunk.response'), requestId: Id, chunk: Type.Optional(RunArtifactChunk), error: Type.Optional(DashboardError) },
  Strict,
);


/**
 * A job's outputs as stored (`jobs.outputs`): the agent masked released secrets and secret
 * outputs (`***`) before sending them, so what is stored is what may be shown.
 */
export const RunJobOutputs = Type.Object({ jobId: Id, /** The job's display name. */ job: Type.String(), outputs: Type.Record(Type.String(), Type.Unknown()) }, Strict);
export type RunJobOutputs = Static<typeof RunJobOutputs>;

/** Most runs of one lineage a run detail carries (the original first, then its re-runs by creation). */
export const MAX_LINEAGE_RUNS = 200;

/** One run of a re-run lineage: the original (`parentRunId` null) or a re-run of `parentRunId`. */
export const RunLineageEntry = Type.Object(
  { runId: Id, parentRunId: NullableString, status: Type.String(), triggeredBy: NullableString, createdAt: Type.String({ format: 'date-time' }) },
  Strict,
);
export type RunLineageEntry = Static<typeof RunLineageEntry>;

/**
 * How a run's attestation checks out against the orchestrator's own keys, by the verifier
 * `svc verify-attestation` uses: `verified`; `revoked_key` (the signing key was revoked);
 * `not_verifiable` with the reason (a verifier reason such as `statement_tampered`, or `pending`
 * while the signature is deferred, or `issuer_off` when this orchestrator has no issuer).
 */
export const AttestationBadge = Type.Enum(['verified', 'not_verifiable', 'revoked_key']);
export type AttestationBadge = Static<typeof AttestationBadge>;
export const AttestationVerification = Type.Object(
  {
    badge: AttestationBadge,
    /** Null when verified. */
    reason: NullableString,
    message: Type.String({ maxLength: 2000 }),
  },
  Strict,
);
export type AttestationVerification = Static<typeof AttestationVerification>;

/** One provenance attestation of a run (docs/provenance.md): its subject, signature and verification. */
export const RunAttestation = Type.Object(
  {
    attestationId: Id,
    jobId: Id,
    /** The job's display name. */
    job: Type.String(),
    /** The attested file as the in-toto subject names it (workspace-relative path). */
    subject: Type.String({ maxLength: 1000 }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    /** `<base name>.svc.json`: the bundle's file and run-artifact name. */
    bundleName: Type.String({ maxLength: 1100 }),
    /** `pending` while the signature is deferred (no bundle yet). */
    status: Type.Union([Type.Literal('pending'), Type.Literal('fulfilled')]),
    /** live, deferred or offline-backfill; null while pending. */
    origin: NullableString,
    /** The signing key id; null while pending. */
    kid: NullableString,
    createdAt: Type.String({ format: 'date-time' }),
    verification: AttestationVerification,
  },
  Strict,
);
export type RunAttestation = Static<typeof RunAttestation>;

/** Most attestations one run detail lists. */
export const MAX_RUN_ATTESTATIONS = 200;

/**
 * What the dashboard's run page shows beyond `run.show`: job outputs, the whole re-run lineage and
 * the attestations. A message of its own, so relays that do not ask for it never receive it.
 */
export const RunDetail = Type.Object(
  {
    runId: Id,
    /** Jobs that stored outputs, in the run's job order. */
    outputs: Type.Array(RunJobOutputs),
    /** The original run and every re-run of it, oldest first (at most MAX_LINEAGE_RUNS). */
    lineage: Type.Array(RunLineageEntry),
    lineageTruncated: Type.Boolean(),
    attestations: Type.Array(RunAttestation),
  },
  Strict,
);
export type RunDetail = Static<typeof RunDetail>;

export const RunDetailRequest = Type.Object({ type: Type.Literal('run.detail.request'), requestId: Id, orgId: Id, runId: Id }, Strict);
export const RunDetailResponse = Type.Object(
  { type: Type.Literal('run.detail.response'), requestId: Id, detail: Type.Optional(RunDetail), error: Type.Optional(DashboardError) },
  Strict,
);

/** The signed bundle of one attestation of a run (the dashboard's download link). */
export const RunAttestationRequest = Type.Object({ type: Type.Literal('run.attestation.request'), requestId: Id, orgId: Id, runId: Id, attestationId: Id }, Strict);
export const RunAttestationResponse = Type.Object(
  {
    type: Type.Literal('run.attestation.response'),
    requestId: Id,
    attestation: Type.Optional(Type.Object({ fileName: Type.String({ minLength: 1, maxLength: 1100 }), bundle: AttestationBundle }, Strict)),
    error: Type.Optional(DashboardError),
  },
  Strict,
);
