// The lock file `.svc/svc.lock.json`: what `svc compile` writes and the only thing the
// orchestrator reads to match events and schedule jobs. Closures never appear here: rules,
// filters, hooks and generators are flags or dynamic references that the agent resolves in
// the loaded workflow.
//
// Objects are deliberately open (extra properties allowed): an additive schema bump adds fields
// that older orchestrators must read past. Boolean `has*` flags other than `hasOutputs` are
// `true` or omitted, never `false`. Pattern lists keep their declared order (a later `!pattern`
// overrides an earlier one); set-like lists (actions, events, labels, contexts) are sorted.
import { Type, type Static } from 'typebox';

/** Stamped by the compiler; incremented on every lock format change. */
export const LOCK_SCHEMA_VERSION = 43;
/**
 * Oldest lock schema this orchestrator reads. 38 is the last breaking change before the
 * compatibility window (the window itself started there); older locks must be recompiled.
 */
export const OLDEST_SUPPORTED_LOCK_SCHEMA = 38;
/**
 * Breaking lock versions, oldest first. A lock's `minReaderVersion` is the newest one that
 * applies to it: 42 applies only to locks with an organization-wide workflow (a trigger with
 * `repositories`) that declares approval at any level, because an older orchestrator would
 * run such a workflow without the hold; 43 applies only to locks where a job declares a `retry`
 * policy (an older orchestrator would never retry it); every other lock gets 38.
 */
export const BREAKING_LOCK_VERSIONS: readonly number[] = Object.freeze([38, 42, 43]);
export const ORG_WIDE_APPROVAL_LOCK_VERSION = 42;
export const RETRY_LOCK_VERSION = 43;
/** Compiler schema in each workflow's content hash; bumping it invalidates source caches. */
export const COMPILE_SCHEMA_VERSION = 7;

const NonEmpty = Type.String({ minLength: 1 });
const Patterns = Type.Array(NonEmpty);
const Names = Type.Array(NonEmpty);
const PositiveInteger = Type.Integer({ minimum: 1 });
const Sha256Hex = Type.String({ pattern: '^[0-9a-f]{64}$' });
/** `<path>#<export>`, e.g. `.svc/workflows/ci.ts#default`. */
export const LockSourceRef = Type.String({ pattern: '^[^#]+#[A-Za-z_$][A-Za-z0-9_$]*$' });
export type LockSourceRef = Static<typeof LockSourceRef>;

export const LockCommitMessage = Type.Union([
  Type.Object({ kind: Type.Literal('glob'), pattern: NonEmpty }),
  Type.Object({ kind: Type.Literal('regex'), source: NonEmpty, flags: Type.String({ pattern: '^[imsu]*$' }) }),
]);
export type LockCommitMessage = Static<typeof LockCommitMessage>;

export const LockRequirement = Type.Union([
  Type.Object({ type: Type.Literal('file-exists'), path: NonEmpty }),
  Type.Object({ type: Type.Literal('file-absent'), path: NonEmpty }),
  Type.Object({ type: Type.Literal('file-contains'), path: NonEmpty, text: NonEmpty }),
]);
export type LockRequirement = Static<typeof LockRequirement>;

export const LockDispatchInput = Type.Object({
  type: Type.Union([Type.Literal('string'), Type.Literal('number'), Type.Literal('boolean'), Type.Literal('choice')]),
  required: Type.Boolean(),
  description: Type.Optional(Type.String()),
  default: Type.Optional(Type.Union([Type.String(), Type.Number(), Type.Boolean()])),
  options: Type.Optional(Type.Array(NonEmpty, { minItems: 1 })),
});
export type LockDispatchInput = Static<typeof LockDispatchInput>;

const repositories = Patterns;
const requires = Type.Array(LockRequirement);

export const LockPushTrigger = Type.Object({
  type: Type.Literal('push'),
  branches: Patterns,
  paths: Patterns,
  commitMessage: Type.Optional(LockCommitMessage),
  repositories,
  requires,
});
export const LockPrTrigger = Type.Object({
  type: Type.Literal('pr'),
  actions: Names,
  branches: Patterns,
  paths: Patterns,
  commitMessage: Type.Optional(LockCommitMessage),
  repositories,
  requires,
});
export const LockCommentTrigger = Type.Object({ type: Type.Literal('comment'), actions: Names, repositories });
export const LockTagTrigger = Type.Object({ type: Type.Literal('tag'), tags: Patterns, repositories, requires });
export const LockReleaseTrigger = Type.Object({ type: Type.Literal('release'), actions: Names, tags: Patterns, repositories });
export const LockReviewTrigger = Type.Object({
  type: Type.Literal('review'),
  actions: Names,
  states: Names,
  branches: Patterns,
  repositories,
});
export const LockReviewCommentTrigger = Type.Object({
  type: Type.Literal('review_comment'),
  actions: Names,
  branches: Patterns,
  repositories,
});
export const LockDispatchTrigger = Type.Object({
  type: Type.Literal('dispatch'),
  inputs: Type.Record(Type.String(), LockDispatchInput),
  branches: Patterns,
});
const refEvent = { refTypes: Names, branches: Patterns, tags: Patterns, repositories };
export const LockCreateTrigger = Type.Object({ type: Type.Literal('create'), ...refEvent });
export const LockDeleteTrigger = Type.Object({ type: Type.Literal('delete'), ...refEvent });
export const LockStatusTrigger = Type.Object({ type: Type.Literal('status'), states: Names, contexts: Patterns, repositories });
export const LockWorkflowRunTrigger = Type.Object({
  type: Type.Literal('workflow_run'),
  workflows: Type.Array(NonEmpty, { minItems: 1 }),
  actions: Names,
  conclusions: Names,
  branches: Patterns,
  repositories,
});
export const LockForkTrigger = Type.Object({ type: Type.Literal('fork'), repositories });
export const LockStarTrigger = Type.Object({ type: Type.Literal('star'), actions: Names, repositories });
export const LockWatchTrigger = Type.Object({ type: Type.Literal('watch'), actions: Names, repositories });
export const LockScheduleTrigger = Type.Object({
  type: Type.Literal('schedule'),
  cron: NonEmpty,
  timezone: NonEmpty,
  branch: Type.Optional(NonEmpty),
});
export const LockWebhookTrigger = Type.Object({ type: Type.Literal('webhook'), events: Type.Array(NonEmpty, { minItems: 1 }) });
export const LockEventTrigger = Type.Object({ type: Type.Literal('event'), name: NonEmpty });
export const LockWorkflowCompleteTrigger = Type.Object({
  type: Type.Literal('workflow_complete'),
  workflows: Names,
  statuses: Names,
});
export const LockJobCompleteTrigger = Type.Object({
  type: Type.Literal('job_complete'),
  workflows: Names,
  jobs: Names,
  statuses: Names,
});
export const LockLifecycleTrigger = Type.Object({ type: Type.Literal('lifecycle'), events: Names });
export const LockWorkflowsFailedBatchTrigger = Type.Object({
  type: Type.Literal('workflows_failed_batch'),
  workflows: Names,
  threshold: PositiveInteger,
  windowSeconds: PositiveInteger,
});

/** Every trigger member, for a discriminated check (`compileMessageUnion`). */
export const LockTriggerMembers = [
  LockPushTrigger,
  LockPrTrigger,
  LockCommentTrigger,
  LockTagTrigger,
  LockReleaseTrigger,
  LockReviewTrigger,
  LockReviewCommentTrigger,
  LockDispatchTrigger,
  LockCreateTrigger,
  LockDeleteTrigger,
  LockStatusTrigger,
  LockWorkflowRunTrigger,
  LockForkTrigger,
  LockStarTrigger,
  LockWatchTrigger,
  LockScheduleTrigger,
  LockWebhookTrigger,
  LockEventTrigger,
  LockWorkflowCompleteTrigger,
  LockJobCompleteTrigger,
  LockLifecycleTrigger,
  LockWorkflowsFailedBatchTrigger,
] as const;

export const LockTrigger = Type.Union([...LockTriggerMembers]);
export type LockTrigger = Static<typeof LockTrigger>;
export type LockTriggerType = LockTrigger['type'];

export const LockApprovalClause = Type.Object({
  users: Names,
  teams: Names,
  roles: Names,
  count: PositiveInteger,
});
export type LockApprovalClause = Static<typeof LockApprovalClause>;

export const LockApproval = Type.Object({
  clauses: Type.Array(LockApprovalClause, { minItems: 1 }),
  reason: Type.Optional(Type.String()),
  timeoutSeconds: Type.Optional(PositiveInteger),
  when: Type.Union([Type.Literal('always'), Type.Literal('untrusted'), Type.Literal('fork')]),
});
export type LockApproval = Static<typeof LockApproval>;

/** Where a closure lives in the loaded definition (`rules[0]`, `jobs.build.steps[1].rules[0]`). */
export const LockDynamicRef = Type.Object({
  name: Type.String(),
  mode: Type.Union([Type.Literal('run'), Type.Literal('skip')]),
  ref: NonEmpty,
});
export type LockDynamicRef = Static<typeof LockDynamicRef>;

export const LockConcurrency = Type.Object({
  hasGroup: Type.Boolean(),
  cancelInProgress: Type.Boolean(),
  max: Type.Optional(PositiveInteger),
});
export type LockConcurrency = Static<typeof LockConcurrency>;

export const LockRegistry = Type.Object({
  url: NonEmpty,
  scope: Type.Optional(Type.String({ pattern: '^@[a-z0-9][a-z0-9._-]*$' })),
  /** `<context>:<key>`; the token bytes are never in the lock. */
  tokenSecret: Type.String({ pattern: '^[^:]+:.+$' }),
  alwaysAuth: Type.Boolean(),
});
export type LockRegistry = Static<typeof LockRegistry>;

const Flag = Type.Optional(Type.Literal(true));

export const LockStep = Type.Object({
  name: NonEmpty,
  hasOutputs: Type.Boolean(),
  hasCheck: Flag,
  hasWhenInSync: Flag,
  hasRules: Flag,
  hasOnCancel: Flag,
  hasCleanup: Flag,
  approval: Type.Optional(LockApproval),
  /** Milliseconds. */
  timeout: Type.Optional(PositiveInteger),
  /** Result files (JUnit XML or TAP) this step writes: globs relative to the workspace (docs/test-results.md). */
  testResults: Type.Optional(Patterns),
});
export type LockStep = Static<typeof LockStep>;

const MatrixValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);
export const LockMatrix = Type.Union([
  Type.Object({
    type: Type.Literal('static'),
    axes: Type.Record(Type.String(), Type.Array(MatrixValue, { minItems: 1 })),
    /** Number of combinations (job instances). */
    size: PositiveInteger,
  }),
  Type.Object({ type: Type.Literal('dynamic'), ref: NonEmpty }),
]);
export type LockMatrix = Static<typeof LockMatrix>;

export const LockContainer = Type.Object({ image: NonEmpty, options: Type.Array(Type.String()) });
export type LockContainer = Static<typeof LockContainer>;

export const LockCheckout = Type.Object({
  enabled: Type.Boolean(),
  /** 0 means full history. */
  depth: Type.Integer({ minimum: 0 }),
  submodules: Type.Boolean(),
  lfs: Type.Boolean(),
});
export type LockCheckout = Static<typeof LockCheckout>;

export const LockRouting = Type.Object({ prefer: Names, avoid: Names });
export type LockRouting = Static<typeof LockRouting>;

/** A job's retry policy (docs/run-states.md "Retries"); `maxAttempts` counts the first attempt. */
export const LockRetry = Type.Object({
  maxAttempts: Type.Integer({ minimum: 2, maximum: 10 }),
  agentLost: Type.Boolean(),
  failedTests: Type.Boolean(),
  /** Sorted, unique; the failing step's command exit code. */
  exitCodes: Type.Array(Type.Integer({ minimum: 1, maximum: 255 })),
  backoff: Type.Object({
    delaySeconds: Type.Integer({ minimum: 0, maximum: 3600 }),
    factor: Type.Number({ minimum: 1, maximum: 10 }),
    maxDelaySeconds: Type.Integer({ minimum: 0, maximum: 86_400 }),
  }),
});
export type LockRetry = Static<typeof LockRetry>;

export const LockJob = Type.Object({
  name: NonEmpty,
  /** Label matchers an agent must all satisfy. */
  runsOn: Type.Array(NonEmpty, { minItems: 1 }),
  needs: Names,
  matrix: Type.Optional(LockMatrix),
  contexts: Names,
  concurrency: Type.Optional(LockConcurrency),
  container: Type.Optional(LockContainer),
  checkout: LockCheckout,
  /** Seconds between the cancel request and the kill signal. */
  gracePeriod: Type.Optional(Type.Integer({ minimum: 0 })),
  /** Milliseconds. */
  timeout: Type.Optional(PositiveInteger),
  routing: Type.Optional(LockRouting),
  /** A generator evaluated on an agent at run time; its jobs are not in the lock. */
  dynamic: Flag,
  generatorRef: Type.Optional(NonEmpty),
  rules: Type.Optional(Type.Array(LockDynamicRef)),
  approval: Type.Optional(LockApproval),
  retry: Type.Optional(LockRetry),
  hasOutputs: Flag,
  hasOnCancel: Flag,
  hasCleanup: Flag,
  hasOnSuccess: Flag,
  hasOnFailure: Flag,
  hasBeforeStep: Flag,
  hasAfterStep: Flag,
  /** Result files (JUnit XML or TAP) every step of this job may write: globs relative to the workspace. */
  testResults: Type.Optional(Patterns),
  steps: Type.Array(LockStep),
});
export type LockJob = Static<typeof LockJob>;

export const LockWorkflow = Type.Object({
  name: NonEmpty,
  source: LockSourceRef,
  /** `SHA-256(compileSchemaVersion + ':' + treeDigest [+ NUL + assetDigest])`, from the tree hasher. */
  contentHash: Sha256Hex,
  compileSchemaVersion: Type.Integer({ minimum: 1 }),
  triggers: Type.Array(LockTrigger, { minItems: 1 }),
  jobs: Type.Array(LockJob),
  rules: Type.Optional(Type.Array(LockDynamicRef)),
  description: Type.Optional(Type.String()),
  hashFiles: Type.Optional(Patterns),
  resolvedHashFiles: Type.Optional(Names),
  contexts: Type.Optional(Names),
  registries: Type.Optional(Type.Array(LockRegistry)),
  installEnv: Type.Optional(Type.Array(Type.String({ pattern: '^[^:]+:.+$' }))),
  concurrency: Type.Optional(LockConcurrency),
  /** Whole-run wall-clock timeout in milliseconds. */
  timeout: Type.Optional(PositiveInteger),
  approval: Type.Optional(LockApproval),
  hasFilter: Flag,
  hasOnCancel: Flag,
  hasCleanup: Flag,
  hasOnSuccess: Flag,
  hasOnFailure: Flag,
});
export type LockWorkflow = Static<typeof LockWorkflow>;

export const Lock = Type.Object({
  schemaVersion: PositiveInteger,
  /** Omitted on locks compiled before the compatibility window existed. */
  minReaderVersion: Type.Optional(PositiveInteger),
  /** The workflow sources compiled, e.g. `.svc/workflows/*.ts#default`. */
  source: NonEmpty,
  /** SHA-256 hex of the serialized lock without this field. */
  contentHash: Sha256Hex,
  /** `<manager>:<sha256 hex>` of the package manager's lockfile. */
  lockfileHash: Type.Optional(Type.String({ pattern: '^[a-z]+:[0-9a-f]{64}$' })),
  siblingsDigest: Type.Optional(Sha256Hex),
  workflows: Type.Array(LockWorkflow),
});
export type Lock = Static<typeof Lock>;

export type LockAcceptance =
  | { readonly accepted: true }
  | {
      readonly accepted: false;
      /** `lock_too_old`: recompile; `reader_too_old`: upgrade the orchestrator; `invalid`: not a lock. */
      readonly reason: 'lock_too_old' | 'reader_too_old' | 'invalid';
      readonly message: string;
      /** For `reader_too_old`: the lock schema the orchestrator must support. */
      readonly requiredVersion?: number;
    };

/**
 * Lock acceptance (spec, States and transitions): accepted when `schemaVersion` is at or above
 * the reader's oldest supported version and the reader's version is at or above the lock's
 * `minReaderVersion`. A lock without `minReaderVersion` predates the window, so it is read only
 * by a reader at least as new as its `schemaVersion`.
 */
export function checkLockAcceptance(
  lock: { readonly schemaVersion?: unknown; readonly minReaderVersion?: unknown },
  readerVersion: number = LOCK_SCHEMA_VERSION,
  oldestSupported: number = OLDEST_SUPPORTED_LOCK_SCHEMA,
): LockAcceptance {
  const version = lock.schemaVersion;
  const min = lock.minReaderVersion;
  if (!Number.isInteger(version) || (version as number) < 1) {
    return { accepted: false, reason: 'invalid', message: 'Lock file has no valid schemaVersion. Recompile with `svc compile` and push again.' };
  }
  if (min !== undefined && (!Number.isInteger(min) || (min as number) < 1)) {
    return { accepted: false, reason: 'invalid', message: 'Lock file has an invalid minReaderVersion. Recompile with `svc compile` and push again.' };
  }
  const schemaVersion = version as number;
  if (schemaVersion < oldestSupported) {
    return {
      accepted: false,
      reason: 'lock_too_old',
      message: `Lock file schema ${schemaVersion} is older than the oldest supported schema ${oldestSupported}. Recompile with \`svc compile\` and push again.`,
    };
  }
  const required = (min as number | undefined) ?? schemaVersion;
  if (readerVersion < required) {
    return {
      accepted: false,
      reason: 'reader_too_old',
      requiredVersion: required,
      message: `Lock file (schema ${schemaVersion}) requires an orchestrator that reads lock schema ${required} or newer; this orchestrator reads schema ${readerVersion}. Upgrade the orchestrator to a version supporting lock schema ${required}.`,
    };
  }
  return { accepted: true };
}
