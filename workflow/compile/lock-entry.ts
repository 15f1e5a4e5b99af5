// A workflow definition (already imported from `.svc/workflows/*.ts`) → its lock entry.
// Closures are never serialized: rules become dynamic references, a filter becomes `hasFilter`,
// hooks become `has*` flags. Every problem fails with the workflow file and the field path.
import { COMPILE_SCHEMA_VERSION, type LockRegistry, type LockWorkflow } from '../../schemas/lock.ts';
import { childPath, CompileErrorCode, CompileScope } from './compile-scope.ts';
import { concurrency, hookPresent, jobEntries, ruleRefs, timeoutMs } from './job-entries.ts';
import { normalizeApproval } from './normalize-approval.ts';
import { normalizeTriggers, WORKFLOW_NAME } from './normalize-triggers.ts';
import {
  arrayOf,
  CONTEXT_NAME,
  expectObject,
  isFunction,
  nameSet,
  optionalBoolean,
  optionalString,
  relativeGlobList,
  secretRef,
} from './validate-fields.ts';

export { CompileErrorCode, CompileScope } from './compile-scope.ts';

export interface LockEntryOptions {
  /** Repository-relative path of the workflow file, e.g. `.svc/workflows/ci.ts`. */
  readonly sourcePath: string;
  /** Export holding the definition; `default` for the one default export. */
  readonly exportName: string;
  /** The workflow's content hash from the tree hasher (64 hex). */
  readonly contentHash: string;
  /** Paths `hashFiles` resolved to at compile time. */
  readonly resolvedHashFiles?: readonly string[];
}

const WORKFLOW_FIELDS = [
  'on', 'jobs', 'description', 'filter', 'rules', 'contexts', 'concurrency', 'timeout', 'approval', 'hashFiles',
  'registries', 'installEnv', 'onCancel', 'cleanup', 'onSuccess', 'onFailure',
];
const EXPORT_NAME = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const SCOPE_NAME = /^@[a-z0-9][a-z0-9._-]*$/;

function registries(scope: CompileScope, path: string, value: unknown): { list: LockRegistry[]; contexts: string[] } | undefined {
  if (value === undefined) return undefined;
  const contexts: string[] = [];
  const seen = new Set<string>();
  const list = arrayOf(scope, path, value, (item, itemPath): LockRegistry => {
    const r = expectObject(scope, itemPath, item, ['url', 'scope', 'tokenSecret', 'alwaysAuth']);
    let url: URL | undefined;
    try {
      url = typeof r['url'] === 'string' ? new URL(r['url']) : undefined;
    } catch {
      url = undefined;
    }
    if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) {
      scope.fail(CompileErrorCode.invalidRegistry, childPath(itemPath, 'url'), 'must be an http(s) URL');
    }
    if (url.username !== '' || url.password !== '') {
      scope.fail(CompileErrorCode.invalidRegistry, childPath(itemPath, 'url'), 'must not carry credentials: name them with tokenSecret');
    }
    const scopeName = optionalString(scope, childPath(itemPath, 'scope'), r['scope']);
    if (scopeName !== undefined && !SCOPE_NAME.test(scopeName)) scope.fail(CompileErrorCode.invalidRegistry, childPath(itemPath, 'scope'), 'must be an npm scope such as @acme');
    const key = scopeName ?? '(default)';
    if (seen.has(key)) scope.fail(CompileErrorCode.invalidRegistry, itemPath, `a second registry for scope ${key}`);
    seen.add(key);
    const token = secretRef(scope, childPath(itemPath, 'tokenSecret'), r['tokenSecret']);
    contexts.push(token.context);
    const entry: LockRegistry = {
      url: r['url'] as string,
      tokenSecret: token.ref,
      alwaysAuth: optionalBoolean(scope, childPath(itemPath, 'alwaysAuth'), r['alwaysAuth']) ?? false,
    };
    if (scopeName !== undefined) entry.scope = scopeName;
    return entry;
  });
  return { list, contexts };
}

function requireDeclared(scope: CompileScope, path: string, context: string, declared: ReadonlySet<string>): void {
  if (!declared.has(context)) {
    scope.fail(CompileErrorCode.undeclaredContext, path, `uses secret context ${JSON.stringify(context)}, which the workflow does not declare in contexts (or a job context)`);
  }
}

/**
 * A secret of the dependency install: one install serves every job of the workflow, so its
 * context must be the workflow's, not a job's (a job without it would install without it).
 */
function requireWorkflowContext(scope: CompileScope, path: string, context: string, workflowContexts: readonly string[], declared: ReadonlySet<string>): void {
  requireDeclared(scope, path, context, declared);
  if (!workflowContexts.includes(context)) {
    scope.fail(CompileErrorCode.undeclaredContext, path, `uses secret context ${JSON.stringify(context)}, which only a job declares: the dependency install serves every job of the workflow, so declare it in the workflow's contexts`);
  }
}

/** installEnv variables the install sets itself (agent/jobs/private-install.ts): never replaced by a secret. */
const RESERVED_INSTALL_VARIABLE = /^(PATH|HOME|LANG|TMPDIR|NODE_.*|npm_config_.*|SVC_.*)$/i;

/** True when any trigger carries repository patterns (an organization-wide workflow). */
export function isOrganizationWide(entry: Pick<LockWorkflow, 'triggers'>): boolean {
  return entry.triggers.some((t) => 'repositories' in t && t.repositories.length > 0);
}

/** True when the workflow declares approval at workflow, job or step level. */
export function declaresApproval(entry: Pick<LockWorkflow, 'approval' | 'jobs'>): boolean {
  return entry.approval !== undefined || entry.jobs.some((j) => j.approval !== undefined || j.steps.some((s) => s.approval !== undefined));
}

export function workflowToLockEntry(definition: unknown, options: LockEntryOptions): LockWorkflow {
  const fileScope: CompileScope = new CompileScope(options.sourcePath);
  if (typeof options.sourcePath !== 'string' || options.sourcePath === '' || options.sourcePath.includes('#')) {
    fileScope.fail(CompileErrorCode.invalidDefinition, '', 'the workflow source path must be a non-empty path without #');
  }
  if (!EXPORT_NAME.test(options.exportName)) fileScope.fail(CompileErrorCode.invalidDefinition, '', `export name ${JSON.stringify(options.exportName)} is not an identifier`);
  if (!/^[0-9a-f]{64}$/.test(options.contentHash)) fileScope.fail(CompileErrorCode.invalidDefinition, '', 'the content hash must be 64 lowercase hex characters');
  const def = typeof definition === 'object' && definition !== null ? (definition as Record<string, unknown>) : undefined;
  if (def === undefined || def['kind'] !== 'svc.workflow') {
    fileScope.fail(CompileErrorCode.invalidDefinition, options.exportName, 'must be a workflow built with workflow(name, { on, jobs })');
  }
  const name = def['name'];
  if (typeof name !== 'string' || !WORKFLOW_NAME.test(name) || name !== name.trim()) {
    fileScope.fail(CompileErrorCode.invalidName, 'name', `${JSON.stringify(name)} is not a valid workflow name (1 to 100 characters, no ':' '@' or control characters, no surrounding spaces)`);
  }
  const scope: CompileScope = fileScope.withWorkflow(name);
  const o = expectObject(scope, '', def['options'], WORKFLOW_FIELDS);
  if (o['jobs'] === undefined) scope.fail(CompileErrorCode.invalidDefinition, 'jobs', 'is required');

  const jobs = jobEntries(scope, o['jobs']);
  const entry: LockWorkflow = {
    name,
    source: `${options.sourcePath}#${options.exportName}`,
    contentHash: options.contentHash,
    compileSchemaVersion: COMPILE_SCHEMA_VERSION,
    triggers: normalizeTriggers(scope, 'on', o['on']),
    jobs,
  };

  const description = optionalString(scope, 'description', o['description']);
  if (description !== undefined && description.trim() !== '') entry.description = description;
  const rules = ruleRefs(scope, 'rules', 'rules', o['rules']);
  if (rules !== undefined && rules.length > 0) entry.rules = rules;
  if (o['filter'] !== undefined) {
    if (!isFunction(o['filter'])) scope.fail(CompileErrorCode.invalidDefinition, 'filter', 'must be a function');
    entry.hasFilter = true;
  }

  if (o['hashFiles'] !== undefined) {
    const hashFiles = relativeGlobList(scope, 'hashFiles', o['hashFiles']);
    if (hashFiles.length > 0) entry.hashFiles = hashFiles;
  }
  if (options.resolvedHashFiles !== undefined) {
    if (entry.hashFiles === undefined && options.resolvedHashFiles.length > 0) {
      scope.fail(CompileErrorCode.invalidDefinition, 'hashFiles', 'resolved hash files were given for a workflow that declares no hashFiles');
    }
    if (entry.hashFiles !== undefined) entry.resolvedHashFiles = [...new Set(options.resolvedHashFiles)].sort();
  }

  const contexts = nameSet(scope, 'contexts', o['contexts'], CONTEXT_NAME, 'context name');
  if (contexts.length > 0) entry.contexts = contexts;
  const declared = new Set([...contexts, ...jobs.flatMap((j) => j.contexts)]);
  const regs = registries(scope, 'registries', o['registries']);
  if (regs !== undefined && regs.list.length > 0) {
    regs.list.forEach((r, index) => requireWorkflowContext(scope, childPath(childPath('registries', index), 'tokenSecret'), r.tokenSecret.split(':')[0]!, contexts, declared));
    entry.registries = regs.list;
  }
  if (o['installEnv'] !== undefined) {
    const names = new Map<string, string>();
    const refs = arrayOf(scope, 'installEnv', o['installEnv'], (item, itemPath) => {
      const ref = secretRef(scope, itemPath, item);
      requireWorkflowContext(scope, itemPath, ref.context, contexts, declared);
      // The install gets the secret as a variable named by its key part.
      const name = ref.ref.slice(ref.context.length + 1);
      if (RESERVED_INSTALL_VARIABLE.test(name)) scope.fail(CompileErrorCode.invalidSecretRef, itemPath, `projects ${name}, a variable the install sets itself (PATH, HOME, LANG, TMPDIR, NODE_*, npm_config_*, SVC_*): rename the secret`);
      const other = names.get(name);
      if (other !== undefined && other !== ref.ref) scope.fail(CompileErrorCode.invalidSecretRef, itemPath, `projects ${name}, as ${other} does: the install would get one of them only`);
      names.set(name, ref.ref);
      return ref.ref;
    });
    if (refs.length > 0) entry.installEnv = [...new Set(refs)].sort();
  }

  const conc = concurrency(scope, 'concurrency', o['concurrency']);
  if (conc !== undefined) entry.concurrency = conc;
  const timeout = timeoutMs(scope, 'timeout', o['timeout']);
  if (timeout !== undefined) entry.timeout = timeout;
  const approval = normalizeApproval(scope, 'approval', o['approval']);
  if (approval !== undefined) entry.approval = approval;
  if (hookPresent(scope, 'onCancel', o['onCancel'])) entry.hasOnCancel = true;
  if (hookPresent(scope, 'cleanup', o['cleanup'])) entry.hasCleanup = true;
  if (hookPresent(scope, 'onSuccess', o['onSuccess'])) entry.hasOnSuccess = true;
  if (hookPresent(scope, 'onFailure', o['onFailure'])) entry.hasOnFailure = true;
  return entry;
}

