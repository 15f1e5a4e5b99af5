// CLIs: svc and svc-admin commands, dev, hooks, local runs, init, preview.
// One entry per code: its kind (core/errors.ts) and a message template ({name} placeholders)
// describing the condition. How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCatalogue } from './catalogue.ts';

export const CLI_ERROR_CODES = {
  // CLI
  SVC_ERR_CLI_ADMIN_NOT_INSTALLED: { kind: 'unavailable', message: 'svc-admin is not installed ({reason}); install the svc package that ships it, or run svc-admin where it is' },
  SVC_ERR_CLI_ARTIFACT_DIGEST: {
    kind: 'internal',
    message: 'artifact {name} of run {runId} arrived with digest {got}, but {digest} was recorded at upload; the stored object was altered or damaged, nothing was extracted',
  },
  SVC_ERR_CLI_ARTIFACT_TRANSFER: { kind: 'unavailable', message: 'artifact {name} changed or stopped while it was downloading; download it again' },
  SVC_ERR_CLI_APPROVAL_NOT_COUNTED: {
    kind: 'conflict',
    message: 'not counted: {reason} (the decider is not an approver of the hold, or nothing on the run awaits approval)',
  },
  SVC_ERR_CLI_BUNDLE_WRITE: { kind: 'input', message: 'could not write the debug bundle {file}: {reason}' },
  SVC_ERR_CLI_CONFIG_FILE: { kind: 'input', message: 'could not read --config {config}: {reason}' },
  SVC_ERR_CLI_CONFIG_INVALID: { kind: 'input', message: '{path} is not valid JSON ({reason}); fix it or remove it and run "svc login" again' },
  SVC_ERR_CLI_CONFIG_UNREADABLE: { kind: 'input', message: 'cannot read {path}: {reason}' },
  SVC_ERR_CLI_DOCS_UNREADABLE: { kind: 'input', message: 'the documentation folder {dir} cannot be read ({reason}); is the package installed whole?' },
  SVC_ERR_CLI_FEEDBACK_WRITE: { kind: 'input', message: 'could not write the draft {file}: {reason}' },
  SVC_ERR_CLI_FILE: { kind: 'input', message: 'could not read artifact {path}: {reason}' },
  SVC_ERR_CLI_LOGIN_DENIED: { kind: 'not_allowed', message: 'the login was denied in the browser; nothing was stored' },
  SVC_ERR_CLI_LOGIN_DEVICE_UNAVAILABLE: { kind: 'unavailable', message: 'the Platform at {platformUrl} did not start a device login: {reason}' },
  SVC_ERR_CLI_LOGIN_EXPIRED: { kind: 'authentication', message: 'the code expired or was already used before this login completed; run "svc login" again' },
  SVC_ERR_CLI_LOGIN_REFRESH_FAILED: { kind: 'authentication', message: 'the stored token expired and could not be renewed: {reason}; run "svc login" again' },
  SVC_ERR_CLI_LOGIN_WRONG_ORG: {
    kind: 'not_allowed',
    message: 'this token belongs to org {orgId}, not {org}; log in with a token of {org} or leave out --org',
  },
  SVC_ERR_CLI_LOGS_TOO_MANY_PAGES: { kind: 'unavailable', message: 'more than {maxPages} log pages; stopped' },
  SVC_ERR_CLI_NOT_LOGGED_IN: {
    kind: 'authentication',
    message: 'not logged in: run "svc login --platform-url <url>" (or "svc login --token <PAT>", or set SVC_PLATFORM_URL and SVC_TOKEN)',
  },
  SVC_ERR_CLI_NO_ORG: { kind: 'input', message: 'no org chosen: run "svc org use <org>" (or set SVC_ORG)' },
  SVC_ERR_CLI_ORCHESTRATOR_UNREACHABLE: { kind: 'unavailable', message: 'could not reach {issuer}/v1/verify-attestation: {reason}' },
  SVC_ERR_CLI_PLATFORM_BAD_ANSWER: {
    kind: 'unavailable',
    message: 'the Platform\'s {what} does not have the expected shape ({issues}); is the CLI older than the Platform?',
  },
  'SVC_ERR_CLI_PLATFORM_HTTP_{status}': { kind: 'unavailable', message: 'the Platform answered {status} {statusText} for {path}' },
  SVC_ERR_CLI_PLATFORM_UNREACHABLE: { kind: 'unavailable', message: 'cannot reach the Platform at {platformUrl}: {reason}' },
  SVC_ERR_CLI_TRUST_ROOT: { kind: 'input', message: 'trust root {flags} is not { issuer, jwks }: {issues}' },
  SVC_ERR_CLI_USAGE: { kind: 'input', message: 'usage error: {reason}' },
  SVC_ERR_CLI_VERIFY_RESPONSE: { kind: 'internal', message: '{issuer}/v1/verify-attestation answered {status} without a verdict' },
  // DEV
  SVC_ERR_DEV: { kind: 'internal', message: 'svc dev failed: {reason}' },
  SVC_ERR_DEV_BARE_REPO: { kind: 'input', message: '{path} exists but is not a bare git repository; move it aside' },
  SVC_ERR_DEV_EXAMPLE: { kind: 'input', message: '{example} has no .svc/ directory: --example names a directory with workflows' },
  SVC_ERR_DEV_GIT: { kind: 'internal', message: 'git {args} failed in {cwd}: {reason}' },
  SVC_ERR_DEV_NO_WORKFLOWS: {
    kind: 'input',
    message: '{repo} has no .svc/ directory: run `svc init` there first, or try the example with `npm start` (svc dev --example examples/quickstart --push)',
  },
  SVC_ERR_DEV_PORT_IN_USE: {
    kind: 'conflict',
    message: 'port {requested} ({flag}) is in use on 127.0.0.1: pass another {flag}, or {flag} 0 for any free port',
  },
  SVC_ERR_DEV_REPO: { kind: 'input', message: '--repo {dir} is not a directory' },
  SVC_ERR_DEV_ROUTE: { kind: 'unavailable', message: 'the relay did not learn source {sourceId} within {timeoutMs}s; see the log file {logFile}' },
  SVC_ERR_DEV_STATE: { kind: 'internal', message: '{stateFile} is not JSON; remove it to provision again (earlier runs stay in the database)' },
  // HOOK
  SVC_ERR_HOOK_CONFIG: { kind: 'input', message: '{key} "{value}" is not a URL (expected https://<platform>/webhook/<org_id>/git)' },
  SVC_ERR_HOOK_EXISTS: { kind: 'conflict', message: '{hookPath} exists and was not written by svc; move it aside or pass --force to replace it' },
  SVC_ERR_HOOK_FOREIGN: {
    kind: 'conflict',
    message: '{file} already exists and was not written by svc: add `svc compile && git add .svc/svc.lock.json` to it yourself, or rerun with --force to replace it (it is kept as pre-commit.svc-backup)',
  },
  SVC_ERR_HOOK_GIT: { kind: 'internal', message: 'git {args} failed in {gitDir}: {reason}' },
  SVC_ERR_HOOK_NOT_A_REPOSITORY: { kind: 'input', message: 'not inside a git work tree ({reason}): run svc hook install in your repository' },
  SVC_ERR_HOOK_NOT_BARE: {
    kind: 'input',
    message: '{repo} is not a bare git repository (the repository a server pushes into; create one with git init --bare)',
  },
  SVC_ERR_HOOK_OUTSIDE_REPOSITORY: { kind: 'input', message: '{projectRoot} is outside the git work tree {top}' },
  SVC_ERR_HOOK_READ_FAILED: { kind: 'input', message: 'cannot read {file}: {reason}' },
  SVC_ERR_HOOK_SECRET: { kind: 'input', message: '{secretFile} {path} cannot be read: {reason}' },
  SVC_ERR_HOOK_WRITE_FAILED: { kind: 'input', message: 'cannot write {file}: {reason}' },
  // LOCAL
  SVC_ERR_LOCAL_RUN_DEPS: { kind: 'internal', message: 'installing the .svc/ dependencies failed: {reason}' },
  SVC_ERR_LOCAL_RUN_FILES: { kind: 'internal', message: 'cannot gather the repository files for the jobs: {reason}' },
  SVC_ERR_LOCAL_RUN_UNAVAILABLE: {
    kind: 'unavailable',
    message: '{what} is not available in a local run (there is no orchestrator); run it remotely (`svc run remote`) or guard the step with ctx.isTestRun',
  },
  SVC_ERR_LOCAL_SECRETS_READ: { kind: 'input', message: 'cannot read {value}: {reason}' },
  SVC_ERR_LOCAL_SECRETS_SYNTAX: { kind: 'input', message: '{where}: unterminated double quote' },
  // FIXTURE (test fixtures of svc run remote)
  SVC_ERR_FIXTURE_EVENT: { kind: 'input', message: 'a fixture cannot simulate a "{type}" event; use a provider, event or webhook trigger' },
  SVC_ERR_FIXTURE_LOAD: { kind: 'input', message: '{file}: failed to load: {reason}' },
  SVC_ERR_FIXTURE_NOT_FOUND: { kind: 'input', message: 'no fixture matches "{name}"; fixtures: {ids}' },
  // REMOTE (svc run remote on the developer's machine)
  SVC_ERR_REMOTE_RUN_INTERRUPTED: { kind: 'input', message: 'interrupted; run {runId} goes on (svc runs show {runId})' },
  SVC_ERR_REMOTE_RUN_NOT_GIT: { kind: 'input', message: '{root} is not in a git repository: a remote run applies the working tree\'s changes on top of a commit' },
  SVC_ERR_REMOTE_RUN_OVERLAY: { kind: 'input', message: 'cannot read .svcignore: {reason}' },
  SVC_ERR_REMOTE_RUN_TOO_LARGE: { kind: 'input', message: 'the working-tree overlay is {size} MB, over the {max} MB limit of a remote run; commit the change, or list large generated files in .svcignore' },
  SVC_ERR_REMOTE_RUN_UPLOAD: { kind: 'unavailable', message: 'the overlay upload failed: {reason}' },
  // INIT
  SVC_ERR_INIT_FILES_EXIST: { kind: 'conflict', message: 'svc init would overwrite {present}: keep them, or rerun with --force to replace them' },
  SVC_ERR_INIT_WRITE_FAILED: { kind: 'input', message: 'cannot write {path}: {reason}' },
  // PREVIEW
  SVC_ERR_PREVIEW_NOT_A_REPOSITORY: {
    kind: 'input',
    message: '{root} is not in a git work tree: preview builds its event from git (branch, commit, changed files); run `git init` and commit',
  },
  // TYPES
  SVC_ERR_TYPES_WRITE_FAILED: { kind: 'input', message: 'cannot write {rel}: {reason}' },
} as const satisfies ErrorCatalogue;
