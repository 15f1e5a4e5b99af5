// Types of what workflow code sees at run time: the step context, the rule/filter context and
// the hook context. Their real runtime is the agent's step runner; createTestStepContext gives a
// local one for unit tests.

export type MaybePromise<T> = T | Promise<T>;

export type MatrixValue = string | number | boolean;
/** Step outputs seen so far in a job, keyed by step name. */
export type OutputsMap = { readonly [step: string]: object };
/** What a step that cannot know its predecessors sees (array form of `steps`). */
export type AnyOutputs = { readonly [step: string]: Readonly<Record<string, unknown>> };
export type MatrixCombination = { readonly [axis: string]: MatrixValue };
export type InputValue = string | number | boolean;

export interface ShellResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

export interface ShellOptions {
  readonly cwd?: string;
  /** Merged over the step environment. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** `false` resolves with the result on a non-zero exit instead of rejecting. Default true. */
  readonly reject?: boolean;
  readonly input?: string;
  /** Milliseconds. */
  readonly timeout?: number;
}

/** A value interpolated into `ctx.$`: always one argument (an array: one argument per item). */
export type ShellValue = string | number | readonly (string | number)[];

/**
 * Runs a program without a shell: the template's text is split on spaces into arguments and
 * each `${value}` becomes exactly one argument, so metacharacters in values are inert.
 */
export interface Shell {
  (template: TemplateStringsArray, ...values: readonly ShellValue[]): Promise<ShellResult>;
  (options: ShellOptions): Shell;
}

export interface StepLogger {
  info(message: string, fields?: Readonly<Record<string, unknown>>): void;
  warn(message: string, fields?: Readonly<Record<string, unknown>>): void;
  error(message: string, fields?: Readonly<Record<string, unknown>>): void;
}

export interface SecretsApi {
  /** `KEY` or a qualified `<context>:<KEY>`; `undefined` when not granted. */
  get(key: string): string | undefined;
}

export interface EmitResult {
  readonly deliveryId?: string;
}

export interface CacheRestoreOptions {
  readonly paths: readonly string[];
  readonly restoreKeys?: readonly string[];
}
export interface CacheRestoreResult {
  readonly hit: boolean;
  readonly matchedKey?: string;
}
export interface CacheApi {
  restore(key: string, options: CacheRestoreOptions): Promise<CacheRestoreResult>;
  save(key: string, paths: readonly string[]): Promise<{ readonly saved: boolean }>;
}

export interface ArtifactUploadOptions {
  /** Keep the artifact fewer days than the orchestrator's retention (never more). */
  readonly retentionDays?: number;
}
export interface ArtifactUploadResult {
  readonly name: string;
  readonly sizeBytes: number;
  /** `sha256:<hex>` of the stored tarball; downloads check it. */
  readonly digest?: string;
  readonly fileCount?: number;
}
export interface ArtifactDownloadOptions {
  /**
   * `current`: this run only; `upstream`: the run whose completion triggered this one
   * (a `workflowComplete` follow-up). Default: this run, then the upstream run.
   */
  readonly from?: 'current' | 'upstream';
}
export interface ArtifactDownloadResult {
  /** Absolute directory the artifact's files were extracted into. */
  readonly path: string;
  readonly digest?: string;
  readonly fileCount?: number;
}
export interface ArtifactsApi {
  /** Packs `paths` (inside the workspace, a ctx.mktemp directory, or a ctx.mktempFile file) into artifact `name` of this run. */
  upload(name: string, paths: readonly string[], options?: ArtifactUploadOptions): Promise<ArtifactUploadResult>;
  /** Extracts artifact `name` into `destination` (inside the workspace or a ctx.mktemp directory; default the workspace root). */
  download(name: string, destination?: string, options?: ArtifactDownloadOptions): Promise<ArtifactDownloadResult>;
}

export type OidcTokenResult =
  | { readonly token: string; readonly expiresIn: number; readonly deferred?: undefined }
  | { readonly deferred: true; readonly code: string };

export interface OidcApi {
  token(options: { readonly audience: string }): Promise<OidcTokenResult>;
}

export interface ProvenanceSubject {
  /** Artifact path relative to the repository root. */
  readonly path: string;
}
export interface AttestProvenanceOptions {
  readonly subjects: readonly ProvenanceSubject[];
  /** Extra predicate fields recorded in the statement. */
  readonly predicate?: Readonly<Record<string, unknown>>;
}
export interface AttestProvenanceResult {
  /** Bundle file written next to the artifact (`<artifact>.svc.json`). */
  readonly bundlePaths: readonly string[];
  /** True when the token was deferred and the statement frozen for later fulfilment. */
  readonly deferred: boolean;
  /** One entry per subject, in order (present in a real job; a test context may omit it). */
  readonly attestations?: readonly ProvenanceAttestation[];
}
export interface ProvenanceAttestation {
  /** Workspace-relative path: the in-toto subject name. */
  readonly subject: string;
  /** SHA-256 (hex) of the file's bytes, computed by the agent. */
  readonly sha256: string;
  /** Names the attestation for `svc-admin attestations show` (also once a deferral is fulfilled). */
  readonly attestationId: string;
  /** SHA-256 of the frozen statement; a deferred bundle's token carries it as `statement_hash`. */
  readonly statementHash: string;
  readonly deferred: boolean;
  /** Why signing was deferred (`unavailable`, `key_unavailable`, `signer_failed`, `key_revoked`). */
  readonly code?: string;
  readonly bundlePath?: string;
  /** Run artifact holding the bundle (`svc runs download <run> <name>`); absent without storage. */
  readonly artifact?: string;
  /** `<artifact>.sigstore.json`: the same signature as a Sigstore bundle v0.3 (docs/provenance.md). */
  readonly sigstoreBundlePath?: string;
  /** Run artifact holding the Sigstore bundle; absent without storage. */
  readonly sigstoreArtifact?: string;
}

/** The normalized event a run was created for (the orchestrator's normalization). */
export interface SdkEvent {
  readonly type: string;
  readonly action?: string;
  readonly branch?: string;
  readonly tag?: string;
  readonly sha?: string;
  readonly repository?: string;
  readonly sender?: string;
  readonly payload?: unknown;
  readonly [field: string]: unknown;
}

/** What rules, skip predicates, workflow filters and dynamic generators see. */
export interface RuleContext {
  readonly event: SdkEvent;
  /** Repository-relative paths changed by the event; empty when unknown. */
  readonly changedFiles: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly $: Shell;
  readonly inputs: Readonly<Record<string, InputValue>>;
}

export interface StepContext<Prev extends OutputsMap = AnyOutputs, M extends MatrixCombination = MatrixCombination>
  extends RuleContext {
  /** Current environment (process env plus setEnv/addPath changes). */
  readonly env: Readonly<Record<string, string | undefined>>;
  setEnv(key: string, value: string): void;
  /** Prepends a directory to PATH for later commands. */
  addPath(dir: string): void;
  /** Outputs of an earlier step of this job. */
  outputsOf<K extends keyof Prev & string>(step: K): Prev[K];
  /** Outputs of a job this job needs. */
  jobOutputs(job: string): Readonly<Record<string, unknown>> | undefined;
  /** An output whose value is masked in logs and stored sealed. */
  setSecretOutput(key: string, value: string): void;
  readonly secrets: SecretsApi;
  emit(name: string, payload?: unknown): Promise<EmitResult>;
  readonly log: StepLogger;
  /** A new empty directory, removed when the job ends. */
  mktemp(): Promise<string>;
  /** A new empty file, removed when the job ends. */
  mktempFile(options?: { readonly suffix?: string }): Promise<string>;
  readonly isTestRun: boolean;
  readonly cache: CacheApi;
  readonly artifacts: ArtifactsApi;
  /** Test results (docs/test-results.md): `report(path)` adds a JUnit XML or TAP file this step wrote. */
  readonly tests: TestsApi;
  readonly svc: { readonly oidc: OidcApi };
  attestProvenance(options: AttestProvenanceOptions): Promise<AttestProvenanceResult>;
  readonly matrix: Readonly<M>;
  readonly repoRoot: string;
}

/** `ctx.tests`: result files read by the agent after the step, beside the declared `testResults`. */
export interface TestsApi {
  /** A JUnit XML or TAP file (relative to the workspace) to read when this step ends. */
  report(path: string): void;
}

/** Hook outcome metadata (`ctx.outcome`). */
export interface Outcome {
  readonly status: 'cancelled' | 'success' | 'failed';
  readonly reason?: string;
  readonly failedStep?: string;
  readonly stepOutputs: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Milliseconds. */
  readonly duration: number;
}

export interface HookContext<M extends MatrixCombination = MatrixCombination> extends StepContext<AnyOutputs, M> {
  readonly outcome: Outcome;
}

export interface StepHookContext<M extends MatrixCombination = MatrixCombination> extends StepContext<AnyOutputs, M> {
  readonly step: {
    readonly name: string;
    /** Present in afterStep. */
    readonly status?: 'success' | 'failed' | 'skipped' | 'cancelled';
  };
}

export type HookFn<C> = (ctx: C) => MaybePromise<void>;
/** A hook: a function, or `{ run, timeout }` with `timeout` in milliseconds (default 5 minutes). */
export type Hook<C> = HookFn<C> | { readonly run: HookFn<C>; readonly timeout?: number };
