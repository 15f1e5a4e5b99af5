// Plugins: sign-in, custody, storage, git and GitHub providers.
// One entry per code: its kind (core/errors.ts) and a message template ({name} placeholders)
// describing the condition. How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCatalogue } from './catalogue.ts';

export const PLUGINS_ERROR_CODES = {
  // PLUGIN
  SVC_ERR_PLUGIN_CONTRACT: { kind: 'internal', message: '{kind} "{id}" fails contract point "{point}": {reason}' },
  SVC_ERR_PLUGIN_AMBIGUOUS: { kind: 'conflict', message: 'several {kind} plugins are signed in ({entries}); configure which one serves' },
  SVC_ERR_PLUGIN_CLOSE: { kind: 'internal', message: 'some plugins failed to close: {failures}' },
  SVC_ERR_PLUGIN_HOST_CLOSED: { kind: 'unavailable', message: 'the plugin host is closed' },
  SVC_ERR_PLUGIN_HOST_FAILED: { kind: 'unavailable', message: 'the plugin host is unusable after a failed sign-in: {failure}' },
  SVC_ERR_PLUGIN_HOST_OPTIONS: { kind: 'internal', message: 'createTimeoutMs must be a positive integer, got {createTimeoutMs}' },
  SVC_ERR_PLUGIN_NOT_FOUND: { kind: 'not_found', message: 'no {kind} plugin "{id}" is signed in (${ids.length === 0 ?' },
  SVC_ERR_PLUGIN_SIGN_IN: { kind: 'internal', message: '{value} failed sign-in at phase "{phase}": {reason}' },
  SVC_ERR_PLUGIN_UNDECLARED_DEPENDENCY: { kind: 'input', message: 'plugin "{id}" asked for {dependency} without declaring it in dependencies' },
  // CUSTODY
  SVC_ERR_CUSTODY_COMMAND: { kind: 'internal', message: 'signer command "{display} {verb}" {what}' },
  SVC_ERR_CUSTODY_COMMAND_CONFIG: { kind: 'internal', message: 'SVC_ORCHESTRATOR_SIGNER_COMMAND is empty' },
  SVC_ERR_CUSTODY_KEY_STATE: { kind: 'conflict', message: 'KMS key {keyArn} is {kid}, not {kid}' },
  SVC_ERR_CUSTODY_KEY_UNLOADABLE: { kind: 'internal', message: 'signing key {kid} is not a db-custody key' },
  SVC_ERR_CUSTODY_KMS: { kind: 'internal', message: 'KMS {what} for {keyArn} failed: {reason}' },
  SVC_ERR_CUSTODY_KMS_CONFIG: {
    kind: 'internal',
    message: 'set both SVC_ORCHESTRATOR_KMS_ACCESS_KEY_ID and SVC_ORCHESTRATOR_KMS_SECRET_ACCESS_KEY, or neither',
  },
  SVC_ERR_CUSTODY_KMS_KEY_SPEC: { kind: 'internal', message: 'KMS key {keyArn} is {keySpec}; ES256 needs an ECC_NIST_P256 key' },
  SVC_ERR_CUSTODY_KMS_SIGNATURE: { kind: 'internal', message: 'KMS returned a signature that is not DER ECDSA: {why}' },
  SVC_ERR_CUSTODY_NOT_BOUND: { kind: 'internal', message: 'db custody has no key table yet (the identity subsystem binds it at start)' },
  SVC_ERR_CUSTODY_NO_ACTIVE_KEY: { kind: 'unavailable', message: 'no active signing key yet (svc-admin signing-key generate creates one)' },
  // SCALER
  SVC_ERR_SCALER_CONFIG_INVALID: { kind: 'input', message: 'scaler config {file}: {what}' },
  SVC_ERR_SCALER_KUBERNETES_API: { kind: 'unavailable', message: 'kubernetes scaler: {operation} in namespace {namespace} failed: {reason}' },
  SVC_ERR_SCALER_KUBERNETES_CONFIG: { kind: 'input', message: 'kubernetes scaler: {reason}' },
  SVC_ERR_SCALER_REQUEST_INVALID: { kind: 'input', message: 'scale-up request is invalid: {reason}' },
  SVC_ERR_SCALER_SPAWN: { kind: 'internal', message: 'local scaler could not start an agent: {reason}' },
  // STORAGE
  SVC_ERR_STORAGE_BODY: { kind: 'input', message: 'storage body must be a Buffer, Uint8Array or Readable stream' },
  SVC_ERR_STORAGE_IO: { kind: 'internal', message: 'storage failed to serve the request' },
  SVC_ERR_STORAGE_KEY_CONFLICT: {
    kind: 'conflict',
    message: 'storage key "{key}" clashes with another key used as a folder (filesystem storage cannot hold both "a/b" and "a/b/c")',
  },
  SVC_ERR_STORAGE_KEY_INVALID: { kind: 'input', message: 'storage {what} {value} is invalid: {reason}' },
  SVC_ERR_STORAGE_LIST_AFTER: { kind: 'input', message: 'list "after" must be a key string' },
  SVC_ERR_STORAGE_LIST_LIMIT: { kind: 'input', message: 'list limit must be an integer from 1 to {defaultListLimit}, got {limit}' },
  SVC_ERR_STORAGE_NOT_FOUND: { kind: 'not_found', message: 'no object at storage key "{key}"' },
  SVC_ERR_STORAGE_PRESIGN_EXPIRY: {
    kind: 'input',
    message: 'expiresInSeconds must be an integer from 1 to {maxPresignExpirySeconds}, got {seconds}',
  },
  SVC_ERR_STORAGE_PRESIGN_METHOD: { kind: 'input', message: 'pre-signed URLs are for GET or PUT, not {method}' },
  SVC_ERR_STORAGE_PRESIGN_UNCONFIGURED: { kind: 'internal', message: 'filesystem storage was created without pre-signing options' },
  SVC_ERR_STORAGE_ROOT: { kind: 'internal', message: 'storage root {root} is not a directory' },
  SVC_ERR_STORAGE_S3: { kind: 'unavailable', message: 'S3 {operation} of "{key}" in bucket "{bucket}" at {endpoint} failed: {s3Code}: {reason}' },
  SVC_ERR_STORAGE_S3_CONFIG: {
    kind: 'input',
    message: 'set both SVC_STORAGE_ACCESS_KEY_ID and SVC_STORAGE_SECRET_ACCESS_KEY, or neither (the AWS default credential chain)',
  },
  SVC_ERR_STORAGE_TOO_LARGE: { kind: 'input', message: 'object is larger than the {limit}-byte limit' },
  SVC_ERR_STORAGE_UNREACHABLE: {
    kind: 'unavailable',
    message: 'storage "{type}" cannot be reached or written at start-up: {reason}; fix the SVC_STORAGE_* settings (docs/config.md) or the bucket, then start again',
  },
  SVC_ERR_STORAGE_UPLOAD_ABORTED: { kind: 'input', message: 'the upload ended before its body was complete; nothing was stored' },
  SVC_ERR_STORAGE_URL_EXPIRED: { kind: 'not_allowed', message: 'the pre-signed URL has expired; ask for a new URL' },
  SVC_ERR_STORAGE_URL_SIGNATURE: { kind: 'not_allowed', message: 'the pre-signed URL signature does not match; ask for a new URL' },
  // GIT
  SVC_ERR_GIT_FAILED: { kind: 'unavailable', message: 'git {args} failed: {detail}' },
  SVC_ERR_GIT_FETCH: { kind: 'unavailable', message: 'git fetch from the remote of source {id} failed${all.timedOut ?' },
  SVC_ERR_GIT_FILE_TOO_LARGE: { kind: 'internal', message: '{path} at {sha} is {bytes} bytes, over the {maxBytes}-byte limit' },
  SVC_ERR_GIT_LOCK_TOO_LARGE: { kind: 'internal', message: '{path} at {sha} is {bytes} bytes, over the {maxBytes}-byte limit' },
  SVC_ERR_GIT_MIRROR: { kind: 'internal', message: 'could not create the git mirror for source {id}: {firstLine}' },
  SVC_ERR_GIT_MISSING: { kind: 'unavailable', message: 'git is not installed or not on PATH: install git' },
  SVC_ERR_GIT_READ: { kind: 'internal', message: 'git ls-tree at {sha} failed: {firstLine}' },
  SVC_ERR_GIT_REMOTE_URL: { kind: 'input', message: 'source {id}: remoteUrl {problem}' },
  SVC_ERR_GIT_SHA: { kind: 'input', message: '{what} must be a 40-character lower-case hex commit sha' },
  SVC_ERR_GIT_SOURCE_CREDENTIALS: { kind: 'input', message: 'source {id}: credentials.token must be a non-empty single-line string' },
  SVC_ERR_GIT_SOURCE_SETTINGS: { kind: 'input', message: 'source {id}: settings are invalid: {issues}' },
  SVC_ERR_GIT_UNKNOWN_SHA: {
    kind: 'not_found',
    message: 'commit {sha} is not in the remote of source {id} (fetched all branches and tags, then by id)',
  },
  // GITHUB
  SVC_ERR_GITHUB_AUTH: { kind: 'authentication', message: '{what}: GitHub refused the App credentials (401): {detail}' },
  SVC_ERR_GITHUB_CHECK_RUN_FAILED: { kind: 'unavailable', message: '{what}: GitHub answered {status}: {detail}' },
  SVC_ERR_GITHUB_CHECK_RUN_REFUSED: { kind: 'input', message: '{what}: GitHub refused the request ({status}): {detail}' },
  SVC_ERR_GITHUB_CHECK_RUN_RESPONSE: { kind: 'unavailable', message: 'GitHub returned no check run id for {owner}/{repo}' },
  SVC_ERR_GITHUB_DIFF_TOO_LARGE: {
    kind: 'unavailable',
    message: 'the diff of {owner}/{repo} {base}...{head} has more than {maxPages} pages of files',
  },
  SVC_ERR_GITHUB_FILE_TOO_LARGE: {
    kind: 'internal',
    message: '{path} of {owner}/{repo} at {sha} is {byteLength} bytes, over the {maxReadFileBytes}-byte limit',
  },
  SVC_ERR_GITHUB_FORBIDDEN: { kind: 'authentication', message: '{what}: GitHub refused access (403): {detail}' },
  SVC_ERR_GITHUB_HOOK_DELIVERY_ID: { kind: 'input', message: 'hook delivery id "{id}" is not a GitHub delivery id' },
  SVC_ERR_GITHUB_INSTALLATION_ID: { kind: 'input', message: 'installation id "{installationId}" must be a positive decimal number' },
  SVC_ERR_GITHUB_INSTALLATION_RESPONSE: { kind: 'unavailable', message: 'GitHub returned no installation id for {owner}/{repo}' },
  SVC_ERR_GITHUB_LOCK_TOO_LARGE: {
    kind: 'internal',
    message: '{lockFilePath} of {owner}/{repo} at {sha} is {byteLength} bytes, over the {maxLockFileBytes}-byte limit',
  },
  SVC_ERR_GITHUB_NOT_FOUND: { kind: 'not_found', message: '{what}: not found on GitHub (404)' },
  SVC_ERR_GITHUB_NOT_INSTALLED: { kind: 'not_found', message: 'GitHub App {appId} is not installed on {owner}/{repo}' },
  SVC_ERR_GITHUB_PAGINATION: { kind: 'unavailable', message: 'GitHub\'s next-page link leaves {apiBaseUrl}; refusing to follow it' },
  SVC_ERR_GITHUB_REPOSITORY: { kind: 'input', message: 'repository "{fullName}" is not an owner/name GitHub repository' },
  SVC_ERR_GITHUB_REQUEST: { kind: 'internal', message: '{what}: GitHub answered {status}: {detail}' },
  SVC_ERR_GITHUB_SHA: { kind: 'input', message: '{what} must be a 40-character lower-case hex commit sha' },
  SVC_ERR_GITHUB_SOURCE_CREDENTIALS: {
    kind: 'input',
    message: 'source {id}: credentials.privateKey must be the GitHub App\'s private key in PEM form (-----BEGIN RSA PRIVATE KEY-----)',
  },
  SVC_ERR_GITHUB_SOURCE_SETTINGS: { kind: 'input', message: 'source {id}: settings are invalid: {issues}' },
  SVC_ERR_GITHUB_TOKEN_RESPONSE: { kind: 'unavailable', message: 'GitHub returned no usable installation token for installation {installationId}' },
  SVC_ERR_GITHUB_UNAVAILABLE: { kind: 'unavailable', message: '{what}: GitHub is unavailable: {detail}' },
  // PROVIDER
  SVC_ERR_PROVIDER_PATH_INVALID: { kind: 'input', message: 'file path {path} is not a repository-relative path: {why}' },
} as const satisfies ErrorCatalogue;
