// Workflows: compile, lock file, matching, SDK and step context.
// One entry per code: its kind (core/errors.ts) and a message template ({name} placeholders)
// describing the condition. How to add a code: docs/conventions.md, "Error codes".
import type { ErrorCatalogue } from './catalogue.ts';

export const WORKFLOW_ERROR_CODES = {
  // COMPILE
  SVC_ERR_COMPILE_DIGEST_INVALID: { kind: 'internal', message: 'treeDigest must be 64 lowercase hex characters, got {treeDigest}' },
  SVC_ERR_COMPILE_DUPLICATE_JOB: {
    kind: 'input',
    message: '{file} at {path}: job name {name} is already used at {earlier} (job names are compared ignoring case)',
  },
  SVC_ERR_COMPILE_DUPLICATE_STEP: { kind: 'input', message: '{file} at {path}: step name {name} is already used by steps[{earlier}] of job {job}' },
  SVC_ERR_COMPILE_DUPLICATE_WORKFLOW: {
    kind: 'input',
    message: 'workflow name {name} is declared by both {other} and {source}: names must be unique',
  },
  SVC_ERR_COMPILE_HASHFILES_OUTSIDE_REPO: { kind: 'input', message: 'hashFiles reaches {base}, which resolves to {baseReal} outside the repository' },
  SVC_ERR_COMPILE_HASHFILES_PATTERN: { kind: 'input', message: 'hashFiles pattern {raw} {why}' },
  SVC_ERR_COMPILE_IMPORT_FAILED: { kind: 'input', message: 'cannot list {svcRel}/workflows: {reason}' },
  SVC_ERR_COMPILE_INVALID_APPROVAL: { kind: 'input', message: '{file} at {path}: the approval rule is not valid: {reason}' },
  SVC_ERR_COMPILE_INVALID_CRON: { kind: 'input', message: '{file} at {path}: {value} is not a valid cron expression or nickname' },
  SVC_ERR_COMPILE_INVALID_DEFINITION: { kind: 'input', message: '{file}: the workflow definition is not valid: {reason}' },
  SVC_ERR_COMPILE_INVALID_GLOB: { kind: 'input', message: '{file} at {path}: {value} is not a valid glob' },
  SVC_ERR_COMPILE_INVALID_HOOK: { kind: 'input', message: '{file} at {path}: must be a function or { run, timeout }' },
  SVC_ERR_COMPILE_INVALID_LABEL: { kind: 'input', message: '{file} at {path}: the agent labels are not valid: {reason}' },
  SVC_ERR_COMPILE_INVALID_MATRIX: { kind: 'input', message: '{file} at {path}: the matrix is not valid: {reason}' },
  SVC_ERR_COMPILE_INVALID_NAME: { kind: 'input', message: '{file} at {path}: {name} is not a valid name' },
  SVC_ERR_COMPILE_INVALID_REGEX: { kind: 'input', message: '{file} at {path}: {value} is not a valid regular expression' },
  SVC_ERR_COMPILE_INVALID_REGISTRY: { kind: 'input', message: '{file} at {path}: the package registry is not valid: {reason}' },
  SVC_ERR_COMPILE_INVALID_SECRET_REF: { kind: 'input', message: '{file} at {path}: {value} must be a "<context>:<KEY>" secret reference' },
  SVC_ERR_COMPILE_INVALID_STEP: { kind: 'input', message: '{file} at {path}: the step is not valid: {reason}' },
  SVC_ERR_COMPILE_INVALID_TRIGGER: { kind: 'input', message: '{file} at {path}: the trigger is not valid: {reason}' },
  SVC_ERR_COMPILE_INVALID_VALUE: { kind: 'input', message: '{file} at {path}: the value is not valid: {reason}' },
  SVC_ERR_COMPILE_LOCK_INVALID: { kind: 'internal', message: 'the assembled lock does not match its schema: {issues}' },
  SVC_ERR_COMPILE_NEEDS_CYCLE: { kind: 'input', message: '{file} at {path}: needs form a cycle: {cycle}' },
  SVC_ERR_COMPILE_NOT_A_WORKFLOW: {
    kind: 'input',
    message: '{sourcePath}: the default export is {shown}, not a workflow: build it with workflow(\'name\', { on, jobs }) from \'svc/sdk\'',
  },
  SVC_ERR_COMPILE_NO_DEFAULT_EXPORT: {
    kind: 'input',
    message: '{sourcePath}: has no default export; end it with `export default workflow(\'name\', { on, jobs })`',
  },
  SVC_ERR_COMPILE_PACKAGE_JSON_INVALID: { kind: 'input', message: '{shownAs} {field} must be an object of name → specifier' },
  SVC_ERR_COMPILE_PATH_OUTSIDE_REPO: { kind: 'input', message: '{what} {rel} is outside the repository root {rootAbs}' },
  SVC_ERR_COMPILE_READ_FAILED: { kind: 'input', message: 'cannot list {rel} for hashFiles: {reason}' },
  SVC_ERR_COMPILE_RETRY: { kind: 'input', message: '{file} at {path}: the retry policy is not valid: {reason}' },
  SVC_ERR_COMPILE_SIBLINGS_GIT: {
    kind: 'input',
    message: 'sibling packages are hashed from git-tracked files, but `git ls-files` failed in {rootReal}: {stderr}',
  },
  SVC_ERR_COMPILE_SIBLING_NOT_FOUND: { kind: 'input', message: '{from} depends on {dependency}@{specifier}, but {targetAbs} does not exist' },
  SVC_ERR_COMPILE_SIBLING_OUTSIDE_REPO: {
    kind: 'input',
    message: '{from} depends on {dependency}@{specifier}, which resolves to {targetReal} outside the repository {rootReal}; only in-repo siblings can be hashed — publish it or move it into the repository',
  },
  SVC_ERR_COMPILE_SVC_DIR_MISSING: { kind: 'input', message: '{what} not found at {absPath}: run `svc init` or pass the right directory' },
  SVC_ERR_COMPILE_SYMLINK_DANGLING: {
    kind: 'input',
    message: 'symlink .svc/{rel} -> {linkText} points to nothing: fix the link, remove it or list it in .svc/.svcignore',
  },
  SVC_ERR_COMPILE_SYMLINK_LOOP: { kind: 'input', message: 'symlink .svc/{rel} -> {linkText} never resolves (a loop of links): fix or remove it' },
  SVC_ERR_COMPILE_TOO_MANY_FILES: { kind: 'input', message: 'more than {maxListedFiles} files under {base} for hashFiles: narrow the patterns' },
  SVC_ERR_COMPILE_UNDECLARED_CONTEXT: {
    kind: 'input',
    message: '{file} at {path}: uses secret context {context}, which the workflow does not declare in contexts (or a job context)',
  },
  SVC_ERR_COMPILE_UNHONOURED_FEATURE: {
    kind: 'input',
    message: '{file} at {path}: uses what this version of svc cannot carry out, so no lock is written: {features}',
  },
  SVC_ERR_COMPILE_UNKNOWN_NEED: {
    kind: 'input',
    message: '{file} at {path}: job {job} needs {need}, which is not a job of this workflow (jobs: {known})',
  },
  SVC_ERR_COMPILE_TEST_RESULTS: { kind: 'input', message: '{file} at {path}: the test result files are not valid: {reason}' },
  SVC_ERR_COMPILE_UNSUPPORTED_FILE: {
    kind: 'input',
    message: '.svc/{childRel} is neither a file, a directory nor a symlink (a socket, FIFO or device): remove it or list it in .svc/.svcignore',
  },
  SVC_ERR_COMPILE_WORKSPACE_AMBIGUOUS: { kind: 'input', message: 'two workspace packages are named {name}: {relative} and {dir}; rename one' },
  SVC_ERR_COMPILE_WRITE_FAILED: { kind: 'input', message: 'cannot write {file}: {reason}' },
  // LOCK
  SVC_ERR_LOCK_HASH_MISMATCH: {
    kind: 'input',
    message: 'lock file contentHash does not match its content: it was edited by hand; recompile with `svc compile`',
  },
  SVC_ERR_LOCK_INVALID: { kind: 'input', message: 'lock file is not valid JSON: recompile with `svc compile`' },
  SVC_ERR_LOCK_MISSING: { kind: 'input', message: 'cannot read .svc/svc.lock.json ({reason}): run `svc compile`' },
  SVC_ERR_LOCK_REF_INVALID: { kind: 'not_found', message: 'dynamic reference {ref} is malformed' },
  SVC_ERR_LOCK_REF_UNRESOLVED: {
    kind: 'not_found',
    message: 'dynamic reference {ref} does not exist in workflow {name}: the lock is stale; recompile with `svc compile`',
  },
  // MATCHING
  SVC_ERR_MATCHING_INVALID_REGISTRATION: { kind: 'input', message: 'registration {index}: {message}' },
  // SDK
  SVC_ERR_SDK_ORCHESTRATOR_REQUIRED: {
    kind: 'unavailable',
    message: '{api} needs a job running on an orchestrator; createTestStepContext rejects it unless options.orchestrator provides a stub',
  },
  SVC_ERR_SDK_TEST_DISPOSED: { kind: 'input', message: 'this test step context was disposed' },
  SVC_ERR_SDK_TEST_SECRETS: { kind: 'input', message: 'options.secrets takes exactly one of { flat } or { contexts }' },
  // STEP
  SVC_ERR_STEP_COMMAND_FAILED: { kind: 'internal', message: 'command {command} exited with {exitCode}' },
  SVC_ERR_STEP_EMIT_NAME: { kind: 'input', message: 'ctx.emit: {name} is not a valid event name' },
  SVC_ERR_STEP_EMIT_PAYLOAD: { kind: 'input', message: 'ctx.emit({name}): payload must be JSON-serializable' },
  SVC_ERR_STEP_ENV_NAME: { kind: 'input', message: 'ctx.setEnv: {key} is not a valid variable name' },
  SVC_ERR_STEP_ENV_VALUE: { kind: 'input', message: 'ctx.setEnv({key}): value must be a string' },
  SVC_ERR_STEP_NO_OUTPUTS: { kind: 'not_found', message: 'no outputs for step {stepName} (pass options.stepOutputs)' },
  SVC_ERR_STEP_PATH: { kind: 'input', message: 'ctx.addPath: {dir} is not a single directory' },
  SVC_ERR_STEP_SECRET_AMBIGUOUS: { kind: 'input', message: 'secret {key} exists in contexts {sort}: qualify it as <context>:{key}' },
  SVC_ERR_STEP_SECRET_NAME: { kind: 'input', message: 'ctx.secrets.get takes a non-empty name' },
  SVC_ERR_STEP_SECRET_OUTPUT: { kind: 'input', message: 'ctx.setSecretOutput takes a non-empty key and a string value' },
  SVC_ERR_STEP_SHELL_USAGE: { kind: 'input', message: 'ctx.$ is a tagged template (ctx.$`cmd ${arg}`) or takes an options object' },
  SVC_ERR_STEP_SHELL_VALUE: { kind: 'input', message: 'ctx.$ accepts strings, numbers and arrays of them; got {typeof}' },
  SVC_ERR_STEP_TEST_RESULTS_PATH: { kind: 'input', message: 'ctx.tests.report takes the path of a JUnit XML or TAP file' },
  SVC_ERR_STEP_TEMP_SUFFIX: { kind: 'input', message: 'ctx.mktempFile: suffix cannot contain path separators' },
} as const satisfies ErrorCatalogue;
