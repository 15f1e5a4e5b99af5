// Discovering and importing `.svc/workflows/*` — the only place the compiler runs workflow
// code. Each file default-exports one `workflow(...)`; anything else is an error naming the file.
//
// Mode: TypeScript (`*.ts`, stripped by Node) unless `.svc/package.json` says
// `"svc": { "mode": "mjs" }`, or the directory holds `.mjs` files and no `.ts` file; then `*.mjs`.
// Files of the other kind are left out and reported as a note.
import { createHash } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError, messageOf } from '../../core/errors.ts';
import { isWorkflow, type Workflow } from '../../sdk/workflow.ts';
import { registerSdkResolution } from '../../workflow/sdk-resolution.ts';

export const LoadErrorCode = {
  svcDirMissing: 'SVC_ERR_COMPILE_SVC_DIR_MISSING',
  packageJsonInvalid: 'SVC_ERR_COMPILE_PACKAGE_JSON_INVALID',
  importFailed: 'SVC_ERR_COMPILE_IMPORT_FAILED',
  noDefaultExport: 'SVC_ERR_COMPILE_NO_DEFAULT_EXPORT',
  notAWorkflow: 'SVC_ERR_COMPILE_NOT_A_WORKFLOW',
} as const;

export type WorkflowMode = 'ts' | 'mjs';

export interface WorkflowDiscovery {
  mode: WorkflowMode;
  /** Why this mode: `default`, `package.json`, or `only-mjs`. */
  modeReason: 'default' | 'package.json' | 'only-mjs';
  /** Repo-relative POSIX paths, sorted. */
  files: string[];
  /** Files of the other mode, left out. */
  ignored: string[];
}

export interface LoadedWorkflow {
  /** Repo-relative POSIX path, e.g. `.svc/workflows/ci.ts`. */
  sourcePath: string;
  exportName: 'default';
  definition: Workflow;
}

export interface LoadWorkflowsOptions {
  repoRoot: string;
  /** Relative to `repoRoot`; default `.svc`. */
  svcDir?: string;
}

export interface LoadWorkflowsResult extends WorkflowDiscovery {
  workflows: LoadedWorkflow[];
  /** One line per note (ignored files of the other mode). */
  notes: string[];
}

function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

async function readMode(svcDirAbs: string, svcRel: string): Promise<WorkflowMode | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(svcDirAbs, 'package.json'), 'utf8');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw new InputError(LoadErrorCode.packageJsonInvalid, `cannot read ${svcRel}/package.json: ${messageOf(error)}`, { cause: error });
  }
  let pkg: unknown;
  try {
    pkg = JSON.parse(text);
  } catch (error) {
    throw new InputError(LoadErrorCode.packageJsonInvalid, `${svcRel}/package.json is not valid JSON: ${messageOf(error)}`, { cause: error });
  }
  const mode = (pkg as { svc?: { mode?: unknown } } | null)?.svc?.mode;
  if (mode === undefined) return undefined;
  if (mode !== 'ts' && mode !== 'mjs') {
    throw new InputError(LoadErrorCode.packageJsonInvalid, `${svcRel}/package.json "svc.mode" must be "ts" or "mjs", not ${JSON.stringify(mode)}`);
  }
  return mode;
}

function relPosix(repoRoot: string, abs: string): string {
  return path.relative(repoRoot, abs).split(path.sep).join('/');
}

/** Which workflow files exist and which mode applies. */
export async function discoverWorkflows(options: LoadWorkflowsOptions): Promise<WorkflowDiscovery> {
  const repoRoot = path.resolve(options.repoRoot);
  const svcRel = options.svcDir ?? '.svc';
  const svcDirAbs = path.resolve(repoRoot, svcRel);
  const svcStat = await stat(svcDirAbs).catch(() => undefined);
  if (svcStat === undefined || !svcStat.isDirectory()) {
    throw new InputError(LoadErrorCode.svcDirMissing, `no ${svcRel}/ directory in ${repoRoot}: run \`svc init\` first (or run svc from the repository that holds it)`, {
      details: { path: svcDirAbs },
    });
  }
  const configured = await readMode(svcDirAbs, svcRel);
  const dir = path.join(svcDirAbs, 'workflows');
  let entries: Dirent[] = [];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') throw new InputError(LoadErrorCode.importFailed, `cannot list ${svcRel}/workflows: ${messageOf(error)}`, { cause: error });
  }
  const names = entries.filter((e) => e.isFile() || e.isSymbolicLink()).map((e) => e.name).sort();
  const ts = names.filter((n) => n.endsWith('.ts') && !n.endsWith('.d.ts'));
  const mjs = names.filter((n) => n.endsWith('.mjs'));
  let mode: WorkflowMode = 'ts';
  let modeReason: WorkflowDiscovery['modeReason'] = 'default';
  if (configured !== undefined) {
    mode = configured;
    modeReason = 'package.json';
  } else if (ts.length === 0 && mjs.length > 0) {
    mode = 'mjs';
    modeReason = 'only-mjs';
  }
  const toRel = (n: string): string => relPosix(repoRoot, path.join(dir, n));
  return {
    mode,
    modeReason,
    files: (mode === 'ts' ? ts : mjs).map(toRel),
    ignored: (mode === 'ts' ? mjs : ts).map(toRel),
  };
}

/** First line of a message, trimmed (import errors can carry code frames). */
function firstLine(text: string): string {
  return text.split('\n').find((l) => l.trim() !== '')?.trim() ?? text;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * `:line:col` inside the workflow file: the first stack frame there (a throw at import), or the
 * code-frame header Node puts on a type-stripping syntax error (`/abs/file.ts:2`, the code line,
 * then a caret line).
 */
function positionIn(error: unknown, abs: string, fileUrl: string): string {
  const stack = (error as { stack?: unknown } | null)?.stack;
  if (typeof stack !== 'string') return '';
  const re = new RegExp(`(?:${escapeRegExp(fileUrl)}|${escapeRegExp(abs)})(?:\\?[^:\\s)]*)?:(\\d+)(?::(\\d+))?`);
  const match = re.exec(stack);
  if (!match) return '';
  if (match[2] !== undefined) return `:${match[1]}:${match[2]}`;
  const caretLine = stack.slice(match.index).split('\n').slice(1, 6).find((l) => /^\s*\^+\s*$/.test(l));
  return caretLine === undefined ? `:${match[1]}` : `:${match[1]}:${caretLine.indexOf('^') + 1}`;
}

const requireModule = createRequire(import.meta.url);
/** Content version of each workflow file the first time this process loaded it. */
const firstVersions = new Map<string, string>();

/**
 * Load one workflow module. `require` of an ES module (synchronous, Node >= 22.12) costs a
 * fraction of `import()` per file, which matters at a hundred workflows; a module with top-level
 * await needs `import()`. A file whose content changed since this process first loaded it (tests,
 * long-lived callers) is imported anew under a `?v=<content hash>` URL.
 */
async function loadModule(abs: string, fileUrl: string, version: string): Promise<Record<string, unknown>> {
  const first = firstVersions.get(abs);
  if (first === undefined) firstVersions.set(abs, version);
  if (first === undefined || first === version) {
    try {
      return requireModule(abs) as Record<string, unknown>;
    } catch (error) {
      // Top-level await needs import(). So does a SyntaxError: a require hook installed by a
      // tool (test runners, coverage) may compile `.ts` as CommonJS without stripping types; a
      // genuine syntax error fails the same way under import() and is reported from there.
      if (errnoOf(error) !== 'ERR_REQUIRE_ASYNC_MODULE' && !(error instanceof SyntaxError)) throw error;
      return (await import(fileUrl)) as Record<string, unknown>;
    }
  }
  return (await import(`${fileUrl}?v=${version}`)) as Record<string, unknown>;
}

async function importOne(repoRoot: string, sourcePath: string): Promise<LoadedWorkflow> {
  const abs = path.join(repoRoot, sourcePath);
  const fileUrl = pathToFileURL(abs).href;
  let mod: Record<string, unknown>;
  try {
    const content = await readFile(abs);
    mod = await loadModule(abs, fileUrl, createHash('sha256').update(content).digest('hex').slice(0, 16));
  } catch (error) {
    const where = `${sourcePath}${positionIn(error, abs, fileUrl)}`;
    const kind = error instanceof SyntaxError ? 'syntax error' : 'failed to load';
    throw new InputError(LoadErrorCode.importFailed, `${where}: ${kind}: ${firstLine(messageOf(error))}`, {
      cause: error,
      details: { file: sourcePath },
    });
  }
  if (!('default' in mod) || mod['default'] === undefined) {
    throw new InputError(LoadErrorCode.noDefaultExport, `${sourcePath}: has no default export; end it with \`export default workflow('name', { on, jobs })\``, {
      details: { file: sourcePath },
    });
  }
  const definition = mod['default'];
  if (!isWorkflow(definition)) {
    const shown = definition === null ? 'null' : Array.isArray(definition) ? 'an array' : typeof definition;
    throw new InputError(
      LoadErrorCode.notAWorkflow,
      `${sourcePath}: the default export is ${shown}, not a workflow: build it with workflow('name', { on, jobs }) from 'svc/sdk'`,
      { details: { file: sourcePath } },
    );
  }
  return { sourcePath, exportName: 'default', definition };
}

/** Discover and import every workflow file; the first failing file (in name order) is reported. */
export async function loadWorkflows(options: LoadWorkflowsOptions): Promise<LoadWorkflowsResult> {
  const repoRoot = path.resolve(options.repoRoot);
  const discovery = await discoverWorkflows({ ...options, repoRoot });
  registerSdkResolution();
  const settled = await Promise.allSettled(discovery.files.map((file) => importOne(repoRoot, file)));
  const workflows: LoadedWorkflow[] = [];
  for (const result of settled) {
    if (result.status === 'rejected') throw result.reason;
    workflows.push(result.value);
  }
  const notes = discovery.ignored.length === 0
    ? []
    : [`${discovery.mode} mode: left out ${discovery.ignored.join(', ')} (see "Workflow files" in docs/cli.md)`];
  return { ...discovery, workflows, notes };
}
