// Orchestrator: runs, dispatch, identity, secrets, sources, webhooks, caches, events, admin API.
// One entry per code: its kind (core/errors.ts) and a message template ({name} placeholders)
// describing the condition. How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCatalogue } from './catalogue.ts';

export const ORCHESTRATOR_ERROR_CODES = {
  // APPROVAL (run control: holds, votes)
  SVC_ERR_APPROVAL_ACTOR_INVALID: { kind: 'input', message: 'an approval decision must name who decided (1 to 200 characters)' },
  SVC_ERR_APPROVAL_COMMENT_TOO_LONG: { kind: 'input', message: 'an approval comment is at most 2000 characters' },
  // ARTIFACT (run artifacts: ctx.artifacts, svc runs artifacts|download)
  SVC_ERR_ARTIFACT_EXISTS: { kind: 'input', message: 'run {runId} already has an artifact named {name} from another job; artifact names are unique within a run' },
  SVC_ERR_ARTIFACT_JOB_INACTIVE: { kind: 'not_allowed', message: 'job {jobId} is {status}, not running; requests for it are refused' },
  SVC_ERR_ARTIFACT_JOB_NOT_OWNED: { kind: 'not_allowed', message: 'job {jobId} is not dispatched to agent {agentId}; only the agent running a job may use its artifacts' },
  SVC_ERR_ARTIFACT_JOB_UNKNOWN: { kind: 'not_found', message: 'job {jobId} does not exist' },
  SVC_ERR_ARTIFACT_LIMIT: { kind: 'input', message: 'run {runId} already has {count} artifacts; the limit is {maxPerRun} per run (artifacts.maxPerRun)' },
  SVC_ERR_ARTIFACT_NAME_INVALID: { kind: 'input', message: 'artifact name {name} is refused: {problem}; use 1-128 characters of letters, digits and . _ + -' },
  SVC_ERR_ARTIFACT_NO_UPSTREAM: { kind: 'not_found', message: 'run {runId} was not triggered by another run\'s completion (workflowComplete), so it has no upstream artifacts' },
  SVC_ERR_ARTIFACT_NOT_CONFIGURED: { kind: 'unavailable', message: 'no storage is configured on this orchestrator (SVC_STORAGE_TYPE); artifacts cannot be stored or read' },
  SVC_ERR_ARTIFACT_NOT_FOUND: { kind: 'not_found', message: '{where} has no artifact named {name} (never uploaded, or past its retention)' },
  SVC_ERR_ARTIFACT_OBJECT_MISSING: { kind: 'not_found', message: 'artifact {name} of run {runId} is recorded but its object is gone from storage; upload it again' },
  SVC_ERR_ARTIFACT_OFFSET_INVALID: { kind: 'input', message: 'offset {offset} is outside artifact {name} (0 to {size} bytes)' },
  SVC_ERR_ARTIFACT_REQUEST_DUPLICATE: { kind: 'input', message: 'request id {requestId} was already used for an artifact upload of job {jobId}; use a new request id' },
  SVC_ERR_ARTIFACT_RETENTION_INVALID: { kind: 'input', message: 'retentionDays {retentionDays} is longer than this orchestrator keeps artifacts ({max} days, artifacts.retentionDays)' },
  SVC_ERR_ARTIFACT_SIZE_MISMATCH: { kind: 'input', message: 'uploaded object is {size} bytes but the upload request said {expected}; the upload was discarded, upload again' },
  SVC_ERR_ARTIFACT_TOO_LARGE: { kind: 'input', message: 'artifact {name} is {size} bytes packed; the limit is {maxSizeBytes} bytes (artifacts.maxSizeBytes)' },
  SVC_ERR_ARTIFACT_UPLOAD_MISSING: { kind: 'not_found', message: 'nothing was uploaded for artifact {name}; PUT the tarball to the URL from artifact.upload.response first' },
  SVC_ERR_ARTIFACT_UPLOAD_UNKNOWN: { kind: 'not_found', message: 'no pending artifact upload for request {requestId} of job {jobId}; upload again' },
  // RUNS
  SVC_ERR_RUNS_ID_INVALID: { kind: 'input', message: '"{runId}" is not a run id (a UUID, as "svc runs show" and the dashboard print it)' },
  SVC_ERR_RUNS_JOB_AMBIGUOUS: { kind: 'input', message: '"{job}" names several jobs of run {runId}; pass --job with one display name or id' },
  SVC_ERR_RUNS_JOB_NOT_FOUND: { kind: 'not_found', message: 'run {runId} has no job "{job}"' },
  SVC_ERR_RUNS_JOB_REQUIRED: { kind: 'input', message: 'run {runId} has several jobs: name one with --job to pick a step' },
  SVC_ERR_RUNS_LOG_CURSOR_INVALID: {
    kind: 'input',
    message: 'log cursor is not valid ({why}): pass back the cursor of the previous page, or none to start over',
  },
  SVC_ERR_RUNS_NOT_FOUND: { kind: 'not_found', message: 'no run {runId} in org {orgId}' },
  SVC_ERR_RUNS_ORG_MISSING: { kind: 'input', message: '{type} must name the org (orgId); upgrade the relay' },
  SVC_ERR_RUNS_PAYLOAD_MISSING: { kind: 'not_found', message: 'the payload object {payloadKey} is missing from storage' },
  SVC_ERR_RUNS_PAYLOAD_NONE: { kind: 'not_found', message: 'run {id} was not started by a webhook; it has no payload' },
  SVC_ERR_RUNS_PAYLOAD_NO_STORAGE: { kind: 'unavailable', message: 'this orchestrator has no storage configured; the payload cannot be read' },
  SVC_ERR_RUNS_PAYLOAD_OMITTED: { kind: 'not_found', message: 'the payload of delivery {deliveryId} was not kept: {why}' },
  SVC_ERR_RUNS_PAYLOAD_UNREADABLE: { kind: 'unavailable', message: 'the payload of delivery {deliveryId} could not be read: {reason}' },
  SVC_ERR_RUNS_RERUN_COOLDOWN: {
    kind: 'rate_limited',
    message: 'run {originalRunId} was re-run less than {cooldownSeconds} s ago; retry in {seconds} s',
  },
  SVC_ERR_RUNS_RERUN_LOCK_FETCH: {
    kind: 'unavailable',
    message: 'the lock file of {workflowRepository} at {workflowSha} could not be fetched: {reason}; retry later',
  },
  SVC_ERR_RUNS_RERUN_LOCK_REFUSED: { kind: 'conflict', message: 'the lock file of the run cannot be read: {reason}' },
  SVC_ERR_RUNS_RERUN_NO_EVENT: { kind: 'conflict', message: 'run {id} has no stored event to re-run' },
  SVC_ERR_RUNS_RERUN_NO_LOCK: { kind: 'conflict', message: '{workflowRepository} has no lock file at {workflowSha} any more' },
  SVC_ERR_RUNS_RERUN_NO_PROVIDER: { kind: 'unavailable', message: 'no provider serves routing key {routingKey} on this orchestrator' },
  SVC_ERR_RUNS_RERUN_NO_SOURCE: {
    kind: 'conflict',
    message: 'run {id} came from no source (a remote test run?), so its lock file cannot be fetched again; start it the way it was started',
  },
  SVC_ERR_RUNS_RERUN_NO_WORKFLOW: { kind: 'conflict', message: 'the lock file at {workflowSha} has no workflow "{workflow}"' },
  SVC_ERR_RUNS_RERUN_SOURCE_GONE: { kind: 'conflict', message: 'source {sourceId} of run {id} was removed; the lock file cannot be fetched again' },
  SVC_ERR_RUNS_RESPONSE_TOO_LARGE: {
    kind: 'input',
    message: 'the answer is larger than {maxBytes} bytes and cannot be relayed; read it on the orchestrator',
  },
  SVC_ERR_RUNS_STEP_NOT_FOUND: { kind: 'not_found', message: 'job {job} has no step {index}' },
  SVC_ERR_RUNS_TRIGGERED_BY: { kind: 'input', message: 'triggeredBy must name who asked for the re-run (1 to 200 characters)' },
  // RUN
  SVC_ERR_RUN_NOT_A_REPOSITORY: {
    kind: 'input',
    message: '{root} is not in a git work tree: a local run builds its event from git (branch, commit, changed files); run `git init` and commit',
  },
  SVC_ERR_RUN_NOT_FOUND: { kind: 'not_found', message: 'no run {runId}' },
  // DISPATCH
  SVC_ERR_DISPATCH_CANCELLED_BY: { kind: 'input', message: 'cancelledBy must name who cancelled (1 to 200 characters)' },
  SVC_ERR_DISPATCH_ID_INVALID: { kind: 'input', message: '"{id}" is not a {kind} id (a UUID)' },
  SVC_ERR_DISPATCH_JOB_NOT_FOUND: { kind: 'not_found', message: 'no job has id {jobId}' },
  SVC_ERR_DISPATCH_LABEL_INVALID: { kind: 'input', message: 'label "{value}" is not valid: no spaces, "*" or leading "!"' },
  SVC_ERR_DISPATCH_LABEL_RESERVED: {
    kind: 'input',
    message: 'label "{value}" is in the reserved "svc:" namespace; the orchestrator adds those itself',
  },
  SVC_ERR_DISPATCH_NOT_OWNER: { kind: 'not_allowed', message: 'agent {agentId} does not own job {jobId}' },
  SVC_ERR_DISPATCH_RUN_NOT_FOUND: { kind: 'not_found', message: 'no run has id {runId}' },
  SVC_ERR_DISPATCH_UNSUPPORTED: { kind: 'not_found', message: '{type} is not served by this orchestrator' },
  // IDENTITY
  SVC_ERR_IDENTITY_ARTIFACT: { kind: 'input', message: 'artifact.name must be 1 to 1000 printable characters' },
  SVC_ERR_IDENTITY_ATTESTATION_ORPHAN: { kind: 'input', message: 'attestation {id} has no job row' },
  SVC_ERR_IDENTITY_AUDIENCE: { kind: 'input', message: 'audience must be 1 to 1000 printable characters' },
  SVC_ERR_IDENTITY_JWKS_INVALID: { kind: 'internal', message: '{issuer}/.well-known/jwks.json is not a JWKS of EC P-256 keys' },
  SVC_ERR_IDENTITY_JWKS_UNREACHABLE: { kind: 'unavailable', message: 'could not read {issuer}/.well-known/jwks.json: {reason}' },
  SVC_ERR_IDENTITY_JWK_INVALID: { kind: 'internal', message: 'public key {kid} is not an EC P-256 JWK: {issues}' },
  SVC_ERR_IDENTITY_KEY_NOT_FOUND: { kind: 'not_found', message: 'no signing key has kid {kid}' },
  SVC_ERR_IDENTITY_KEY_STATE: {
    kind: 'conflict',
    message: 'signing key {kid} is {status}; only a retiring key can be retired (rotate first: svc-admin signing-key rotate)',
  },
  SVC_ERR_IDENTITY_KID_INVALID: { kind: 'input', message: '"{kid}" is not a key id (letters, digits, - and _ only)' },
  SVC_ERR_IDENTITY_NOT_OWNER: {
    kind: 'not_allowed',
    message: 'agent {agentId} does not run job {jobId}; only the agent running a job can mint its tokens',
  },
  SVC_ERR_IDENTITY_NO_MASTER_KEY: { kind: 'internal', message: 'no master key (SVC_SECRET_KEY) is configured to seal signing keys' },
  SVC_ERR_IDENTITY_REVOKE_REASON: { kind: 'input', message: 'revoking a key needs a reason (--reason <text>)' },
  SVC_ERR_IDENTITY_SIGNATURE_SHAPE: {
    kind: 'internal',
    message: 'the custody plugin returned a {signature}-byte signature; ES256 needs {es256SignatureBytes}',
  },
  // SECRETS
  SVC_ERR_SECRETS_CONTEXT_EXISTS: { kind: 'conflict', message: 'context {name} already exists' },
  SVC_ERR_SECRETS_CONTEXT_NAME: {
    kind: 'input',
    message: 'context name {name} is not valid: 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit',
  },
  SVC_ERR_SECRETS_CONTEXT_NOT_FOUND: { kind: 'not_found', message: 'context {name} does not exist: create it with svc-admin context create {name}' },
  SVC_ERR_SECRETS_DENIED: {
    kind: 'not_allowed',
    message: 'secret context "{name}" does not exist (declared by the job or its workflow); nothing was released',
  },
  SVC_ERR_SECRETS_KEY: { kind: 'input', message: 'secret key {key} is not valid: 1-128 letters, digits or "_", not starting with a digit' },
  SVC_ERR_SECRETS_NO_MASTER_KEY: { kind: 'internal', message: 'no master key (SVC_SECRET_KEY) is configured' },
  SVC_ERR_SECRETS_OPEN: {
    kind: 'internal',
    message: 'secret {context}:{key} opens with no configured master key: finish the key rotation (SVC_SECRET_KEY_OLD) and run svc-admin rotate-key',
  },
  SVC_ERR_SECRETS_RULE: { kind: 'input', message: 'at most {maxPatterns} {kind} patterns' },
  SVC_ERR_SECRETS_VALUE: { kind: 'input', message: 'a secret value must not be empty' },
  // SOURCE
  SVC_ERR_SOURCE_CREDENTIALS_INVALID: { kind: 'input', message: 'credentials of source {id} are not an object' },
  SVC_ERR_SOURCE_EXISTS: { kind: 'conflict', message: 'org "{orgId}" already has a source with routing key {routingKey}${sourceId ?' },
  SVC_ERR_SOURCE_FORK_POLICY: { kind: 'input', message: 'fork policy "{value}" is not one of run, ignore (reject is stored as ignore)' },
  SVC_ERR_SOURCE_ID_INVALID: { kind: 'input', message: 'source id "{sourceId}" is not valid: use 1-100 letters, digits, ".", "_" or "-"' },
  SVC_ERR_SOURCE_KIND_INVALID: { kind: 'input', message: 'provider kind "{providerKind}" is not valid' },
  SVC_ERR_SOURCE_NOT_FOUND: { kind: 'not_found', message: 'no source with id {id}; list them with "svc-admin source list"' },
  SVC_ERR_SOURCE_NOT_ROTATING: { kind: 'input', message: 'source {id} has no rotation under way' },
  SVC_ERR_SOURCE_ORG_INVALID: { kind: 'input', message: 'org id "{orgId}" is not valid: use 1-100 letters, digits, ".", "_" or "-"' },
  SVC_ERR_SOURCE_ROTATING: {
    kind: 'input',
    message: 'source {id} is already rotating: finish it first with "svc-admin source rotate-secret {id} --finish"',
  },
  SVC_ERR_SOURCE_SECRET_WEAK: { kind: 'input', message: 'a webhook secret must have at least 16 characters' },
  SVC_ERR_SOURCE_TARGET_REQUIRED: { kind: 'input', message: 'a {providerKind} source needs its target id (the app id of a GitHub App)' },
  // CACHE
  SVC_ERR_CACHE_DEPS_HASH_MISMATCH: { kind: 'input', message: 'depsHash {depsHash} differs from the uploaded key {key}' },
  SVC_ERR_CACHE_JOB_INACTIVE: { kind: 'not_allowed', message: 'job {jobId} is {status}, not running; requests for it are refused' },
  SVC_ERR_CACHE_JOB_NOT_OWNED: {
    kind: 'not_allowed',
    message: 'job {jobId} is not dispatched to agent {agentId}; only the agent running a job may use its caches and events',
  },
  SVC_ERR_CACHE_JOB_UNKNOWN: { kind: 'not_found', message: 'job {jobId} does not exist' },
  SVC_ERR_CACHE_KEY_INVALID: {
    kind: 'input',
    message: '{what} {value} is not a valid cache name: 1-200 characters of letters, digits and ._:+=- starting with a letter or digit',
  },
  SVC_ERR_CACHE_KEY_MISMATCH: { kind: 'input', message: 'save.complete names key {key} but the request was for {key}' },
  SVC_ERR_CACHE_NOT_BUILD_JOB: {
    kind: 'not_allowed',
    message: 'job {jobId} is not a build job; only build jobs upload source and dependency caches',
  },
  SVC_ERR_CACHE_NOT_CONFIGURED: {
    kind: 'unavailable',
    message: 'no cache storage is configured on this orchestrator (SVC_STORAGE_TYPE); jobs install inline',
  },
  SVC_ERR_CACHE_NO_LOCKFILE: { kind: 'input', message: 'run of job {jobId} has no lockfileHash; there is no dependency cache to write' },
  SVC_ERR_CACHE_OBJECT_MISSING: {
    kind: 'not_found',
    message: 'no uploaded object at {objectKey}; upload to the URL from cache.upload.response before cache.upload.complete',
  },
  SVC_ERR_CACHE_ORG_INVALID: { kind: 'input', message: 'org {org} is not a valid org id for cache keys' },
  SVC_ERR_CACHE_PLATFORM_INVALID: { kind: 'input', message: 'platform-arch {value} is not of the form <os>-<arch>' },
  SVC_ERR_CACHE_PLATFORM_UNKNOWN: {
    kind: 'input',
    message: 'the agent did not register an OS and architecture; dependency caches are per platform-arch',
  },
  SVC_ERR_CACHE_REQUEST_DUPLICATE: {
    kind: 'conflict',
    message: 'request id {requestId} was already used for a cache save of job {jobId}; use a new request id',
  },
  SVC_ERR_CACHE_SCOPE_INVALID: { kind: 'input', message: 'scope {scope} is not "shared" or "iso/<run id>"' },
  SVC_ERR_CACHE_SIZE_MISMATCH: {
    kind: 'input',
    message: 'uploaded object is {size} bytes but save.complete says {sizeBytes}; the upload was discarded, save again',
  },
  SVC_ERR_CACHE_TOO_LARGE: {
    kind: 'input',
    message: 'cache entry of {size} bytes exceeds the org\'s user cache quota of {quotaBytes} bytes; it was not saved',
  },
  SVC_ERR_CACHE_UPLOAD_MISSING: {
    kind: 'not_found',
    message: 'nothing was uploaded for cache key {key}; upload to the URL from save.response first',
  },
  SVC_ERR_CACHE_UPLOAD_UNKNOWN: {
    kind: 'not_found',
    message: 'no pending cache save for request {requestId} of job {jobId} (never requested, already completed, or expired)',
  },
  // EVENT
  SVC_ERR_EVENT_INVALID_PAYLOAD: { kind: 'input', message: '{providerEvent} payload must be a JSON object' },
  SVC_ERR_EVENT_JOB_INACTIVE: { kind: 'not_allowed', message: 'job {jobId} is {status}, not running; requests for it are refused' },
  SVC_ERR_EVENT_JOB_NOT_OWNED: {
    kind: 'not_allowed',
    message: 'job {jobId} is not dispatched to agent {agentId}; only the agent running a job may use its caches and events',
  },
  SVC_ERR_EVENT_JOB_UNKNOWN: { kind: 'not_found', message: 'job {jobId} does not exist' },
  SVC_ERR_EVENT_NAME_INVALID: { kind: 'input', message: 'event name must not be empty' },
  SVC_ERR_EVENT_NAME_RESERVED: { kind: 'input', message: 'event name "{name}" is reserved for events the orchestrator emits itself' },
  SVC_ERR_EVENT_ORG_INVALID: { kind: 'input', message: 'an internal event needs an org' },
  SVC_ERR_EVENT_PAYLOAD_INVALID: { kind: 'input', message: 'event payload must be JSON-serializable (no cycles or BigInt)' },
  SVC_ERR_EVENT_PAYLOAD_TOO_LARGE: {
    kind: 'input',
    message: 'event payload is {bytes} bytes as JSON; the limit is {maxEventPayloadBytes} (store big data as an artifact and send a reference)',
  },
  SVC_ERR_EVENT_TARGET_INVALID: { kind: 'input', message: 'event target must be 1-{maxEventTargetLength} printable characters' },
  SVC_ERR_EVENT_CHAIN_TOO_DEEP: {
    kind: 'not_allowed',
    message: 'event "{name}" refused by the circuit breaker: it would be {depth} events deep, the limit is {maxChainDepth} (events.maxChainDepth)',
  },
  SVC_ERR_EVENT_RATE_LIMITED: {
    kind: 'rate_limited',
    message: 'event "{name}" refused by the circuit breaker: org {orgId} stored {count} events in the last minute, the limit is {limit}',
  },
  SVC_ERR_EVENT_DLQ_UNKNOWN: { kind: 'not_found', message: 'no event {id} in the dead-letter queue' },
  SVC_ERR_EVENT_DLQ_ID_INVALID: { kind: 'input', message: 'event id {id} is not a UUID' },
  // FORGE_STATUS (run status reported back to the forge: check runs, run-status webhooks)
  SVC_ERR_FORGE_STATUS_FILTER_INVALID: { kind: 'input', message: '{filter} "{value}" is not valid: {why}' },
  SVC_ERR_FORGE_STATUS_ID_INVALID: { kind: 'input', message: '"{id}" is not a forge status delivery id (a UUID, as "svc-admin forge-status list" prints it)' },
  SVC_ERR_FORGE_STATUS_NOT_FOUND: { kind: 'not_found', message: 'no forge status delivery {id}' },
  SVC_ERR_FORGE_STATUS_NO_WEBHOOK: { kind: 'not_found', message: 'source {id} has no run-status webhook' },
  SVC_ERR_FORGE_STATUS_SECRET_OPEN: {
    kind: 'internal',
    message: 'the run-status webhook secret of source {sourceId} opens with neither SVC_SECRET_KEY nor SVC_SECRET_KEY_OLD: set the key it was sealed with as SVC_SECRET_KEY_OLD and run svc-admin rotate-key again',
  },
  SVC_ERR_FORGE_STATUS_SECRET_REQUIRED: {
    kind: 'input',
    message: 'a run-status webhook needs a signing secret of at least {minLength} characters: pass --secret, --secret-file or --generate-secret',
  },
  SVC_ERR_FORGE_STATUS_URL_INVALID: { kind: 'input', message: 'run-status webhook URL "{url}" is not valid: {why}' },
  SVC_ERR_FORGE_STATUS_WEBHOOK_HTTP: { kind: 'unavailable', message: 'the run-status webhook {url} answered HTTP {status}' },
  SVC_ERR_FORGE_STATUS_WEBHOOK_UNREACHABLE: { kind: 'unavailable', message: 'the run-status webhook {url} could not be reached: {reason}' },
  // DELIVERY (the webhook event log as operators read it)
  SVC_ERR_DELIVERY_FILTER_INVALID: { kind: 'input', message: '{filter} "{value}" is not valid: {why}' },
  SVC_ERR_DELIVERY_NOT_FOUND: { kind: 'not_found', message: 'no delivery {deliveryId} in org {orgId}' },
  // CLUSTER
  SVC_ERR_CLUSTER_JOIN_REFUSED: {
    kind: 'authentication',
    message: 'this node\'s cluster.joinToken does not match the one the cluster was created with; set SVC_CLUSTER_JOIN_TOKEN to the cluster\'s token',
  },
  SVC_ERR_CLUSTER_JOIN_TOKEN_MISSING: {
    kind: 'authentication',
    message: 'this database belongs to a cluster with a join token; set SVC_CLUSTER_JOIN_TOKEN (cluster.joinToken) on this node to join it',
  },
  SVC_ERR_CLUSTER_NODE_ID_INVALID: { kind: 'input', message: 'node id {id} must be 1-200 printable characters' },
  SVC_ERR_CLUSTER_SETTINGS_INVALID: { kind: 'input', message: 'cluster settings not changed: {issues}' },
  // TRUST POLICY (an org's trust policy, docs/trust-policy.md)
  SVC_ERR_TRUST_POLICY_EMPTY: { kind: 'input', message: 'the body changes nothing: give forkPolicy (run, ignore, or null to clear)' },
  SVC_ERR_TRUST_POLICY_INVALID: { kind: 'input', message: 'trust policy of {org} not changed: {issues} (--fork-policy takes run, ignore or unset)' },
  SVC_ERR_TRUST_POLICY_FIELD_REMOVED: { kind: 'input', message: 'trust policy field "{field}" was removed: {replacement}; nothing was changed' },
  SVC_ERR_TRUST_POLICY_ORG: { kind: 'input', message: 'name the org once: ?org=<org> or "org" in the body; nothing was changed' },
  // ADMIN
  SVC_ERR_ADMIN_API: { kind: 'internal', message: 'the admin API answered {status} with an unexpected body' },
  SVC_ERR_ADMIN_API_UNREACHABLE: { kind: 'unavailable', message: 'could not reach {origin}: {reason}' },
  SVC_ERR_ADMIN_SCOPE_MISSING: { kind: 'not_allowed', message: '{token} lacks scope {scope} (it has {scopes}); create a token with --scope {scope}' },
  SVC_ERR_ADMIN_TOKEN_EXPIRED: { kind: 'authentication', message: 'admin token "{name}" expired at {expiresAt}; create a new one' },
  SVC_ERR_ADMIN_TOKEN_INVALID: { kind: 'authentication', message: 'the admin token is not valid: {why}' },
  SVC_ERR_ADMIN_TOKEN_MISSING: { kind: 'authentication', message: 'the Authorization header is not "Bearer <token>"; this admin route needs a bearer with scope {scope}' },
  SVC_ERR_ADMIN_TOKEN_NAME_INVALID: { kind: 'input', message: 'admin token name "{name}" must be 1-200 characters without leading or trailing spaces' },
  SVC_ERR_ADMIN_TOKEN_NAME_TAKEN: { kind: 'conflict', message: 'an admin token named "{name}" exists; revoke it first or pick another name' },
  SVC_ERR_ADMIN_TOKEN_NOT_FOUND: { kind: 'not_found', message: 'no admin token has id or live name "{idOrName}"' },
  SVC_ERR_ADMIN_TOKEN_RESTRICTED: { kind: 'not_allowed', message: 'this route needs a token without scope restrictions that has {scope}' },
  SVC_ERR_ADMIN_TOKEN_REVOKED: { kind: 'authentication', message: 'admin token "{name}" was revoked at {revokedAt}' },
  SVC_ERR_ADMIN_TOKEN_SCOPES_INVALID: { kind: 'input', message: 'admin token scopes are not valid: {why}' },
  SVC_ERR_ADMIN_TOKEN_TTL_INVALID: { kind: 'input', message: 'a token lifetime must be a positive whole number of milliseconds' },
  SVC_ERR_ADMIN_UNAUTHORIZED: {
    kind: 'authentication',
    message: 'this admin route needs "Authorization: Bearer <token>" with scope {scope}: the bootstrap token (SVC_BOOTSTRAP_ADMIN_TOKEN) or one from "svc-admin admin-token create"',
  },
  // CONFIG (shared config versions and reload, docs/config.md)
  SVC_ERR_CONFIG_LOCAL_FIELD: { kind: 'input', message: '{paths} are local fields: set them in each node\'s config file or SVC_* environment; a config version holds shared fields only' },
  SVC_ERR_CONFIG_VERSION_INVALID: { kind: 'input', message: 'the shared config is not valid: {reason}' },
  SVC_ERR_CONFIG_VERSION_NOT_FOUND: { kind: 'not_found', message: 'there is no config version {version}' },
  SVC_ERR_CONFIG_VERSION_UNREADABLE: { kind: 'input', message: 'config version {version} has sealed values no master key opens' },
  SVC_ERR_CONFIG_ALREADY_SEEDED: { kind: 'conflict', message: 'config version {version} exists already; change it with "svc-admin config set path=value" or --file' },
  SVC_ERR_CONFIG_REDACTED_VALUE: { kind: 'input', message: '{path} holds ***REDACTED***, not a value: export without --redacted, or set the real value' },
  SVC_ERR_CONFIG_RELOAD_FAILED: { kind: 'internal', message: 'the config reload did not apply, the running config is kept: {reason}' },
  SVC_ERR_CONFIG_RELOAD_IN_PROGRESS: { kind: 'conflict', message: 'Reload already in progress; try again in a moment' },
  // WIRING (subsystems by typed references, core/wiring)
  SVC_ERR_WIRING_CYCLE: { kind: 'internal', message: 'dependency cycle: {path} ({because})' },
  SVC_ERR_WIRING_NEED_MISSING: { kind: 'internal', message: "subsystem '{subsystem}' needs '{ref}', which no subsystem provides" },
  SVC_ERR_WIRING_NOT_PROVIDED: { kind: 'internal', message: "subsystem '{subsystem}' declares it provides '{ref}' but its start did not return it" },
  SVC_ERR_WIRING_NOT_STARTED: { kind: 'internal', message: "no started subsystem provides '{ref}'" },
  SVC_ERR_WIRING_PROVIDED_TWICE: { kind: 'internal', message: "'{ref}' is provided by both subsystem '{first}' and subsystem '{second}'" },
  SVC_ERR_WIRING_SUBSYSTEM_DUPLICATE: { kind: 'internal', message: "two subsystems are named '{subsystem}'" },
  SVC_ERR_WIRING_UNDECLARED_NEED: { kind: 'internal', message: "subsystem '{subsystem}' asked for '{ref}' without declaring it" },
  SVC_ERR_WIRING_UNDECLARED_PROVISION: { kind: 'internal', message: "subsystem '{subsystem}' returned '{ref}', which it does not declare in provides" },
} as const satisfies ErrorCatalogue;
