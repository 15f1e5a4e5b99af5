// `svc compile`: workflow files → `.svc/svc.lock.json`. One tree hasher per compile (the `.svc/`
// tree is walked once however many workflows there are), one lock entry per workflow, the lock
// assembled and serialized deterministically, then written atomically only when its bytes
// change. `check` and `memory` modes compute the same lock and write nothing.
import { randomBytes } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { InputError, messageOf } from '../../core/errors.ts';
import { BREAKING_LOCK_VERSIONS, ORG_WIDE_APPROVAL_LOCK_VERSION, type Lock, type LockWorkflow } from '../../schemas/lock.ts';
import { canonicalStringify } from '../../workflow/lock/canonical-json.ts';
import { createTreeHasher, type HashWarning, lockfileHash, siblingsDigest } from '../../workflow/hash/index.ts';
import { CompileErrorCode, CompileScope, workflowToLockEntry } from '../../workflow/compile/lock-entry.ts';
import { describeUnhonoured, unhonouredFeatures, unhonouredInstall } from '../../workflow/runtime-support.ts';
import { buildLock, LOCK_FILE_NAME, serializeLock } from '../../workflow/lock/lock-file.ts';
import { loadWorkflows, type LoadedWorkflow, type WorkflowMode } from './load-workflows.ts';

export { LOCK_FILE_NAME };

export type CompileMode = 'write' | 'check' | 'memory';

export interface CompileOptions {
  repoRoot: string;
  /** Relative to `repoRoot`; default `.svc`. */
  svcDir?: string;
  /** `write` (default) writes the lock when it changed; `check` and `memory` write nothing. */
  mode?: CompileMode;
}

export interface CompiledWorkflowSummary {
  name: string;
  /** `.svc/workflows/ci.ts#default`. */
  source: string;
  contentHash: string;
  jobs: string[];
  /** Repo-relative POSIX paths covered by this workflow's content hash (tree, then hashFiles). */
  files: string[];
}

/** How the lock on disk compares with the one just compiled. */
export interface LockDrift {
  /** No lock file on disk. */
  missing: boolean;
  /** The lock on disk is not readable JSON with a `workflows` array (reason). */
  unreadable?: string;
  /** Same bytes. */
  identical: boolean;
  /** Same content (formatting may differ): nothing to recompile. */
  upToDate: boolean;
  /** Workflow names only in the new lock, only in the old one, and in both but different. */
  added: string[];
  removed: string[];
  changed: string[];
  /** Top-level fields that differ (`lockfileHash`, `siblingsDigest`, `schemaVersion`, …). */
  fields: string[];
}

export interface CompileResult {
  repoRoot: string;
  /** Absolute path of the lock file. */
  lockPath: string;
  /** Repo-relative path, `.svc/svc.lock.json`. */
  lockRelPath: string;
  workflowMode: WorkflowMode;
  lock: Lock;
  /** The serialized lock (what is, or would be, written). */
  text: string;
  workflows: CompiledWorkflowSummary[];
  /** Hash warnings (symlinks, `.svcignore`, hashFiles), deduplicated. */
  warnings: HashWarning[];
  /** Informational lines (files left out by the mode, no workflows). */
  notes: string[];
  /** Set when the lock needs a newer orchestrator than the previous lock did (a breaking version). */
  notice?: string;
  drift: LockDrift;
  /** The lock bytes differ from the file on disk (or there is none). */
  changed: boolean;
  written: boolean;
}

const TOP_LEVEL_FIELDS = ['schemaVersion', 'minReaderVersion', 'source', 'lockfileHash', 'siblingsDigest', 'contentHash'] as const;
const PLACEHOLDER_HASH = '0'.repeat(64);

function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

async function readPrevious(lockPath: string, lockRelPath: string): Promise<string | undefined> {
  try {
    return await readFile(lockPath, 'utf8');
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return undefined;
    throw new InputError('SVC_ERR_COMPILE_READ_FAILED', `cannot read ${lockRelPath}: ${messageOf(error)}`, { cause: error });
  }
}

/** Compare the lock text on disk (if any) with the new lock, per workflow and per top-level field. */
export function compareLocks(previousText: string | undefined, next: Lock, nextText: string): LockDrift {
  const drift: LockDrift = { missing: previousText === undefined, identical: previousText === nextText, upToDate: false, added: [], removed: [], changed: [], fields: [] };
  const nextNames = next.workflows.map((w) => w.name);
  if (previousText === undefined) {
    drift.added = nextNames;
    return drift;
  }
  if (drift.identical) {
    drift.upToDate = true;
    return drift;
  }
  let prev: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(previousText);
    if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as { workflows?: unknown }).workflows)) throw new Error('no "workflows" array');
    prev = parsed as Record<string, unknown>;
  } catch (error) {
    drift.unreadable = messageOf(error);
    drift.added = nextNames;
    return drift;
  }
  for (const field of TOP_LEVEL_FIELDS) {
    if (canonicalStringify(prev[field] ?? null) !== canonicalStringify(next[field] ?? null)) drift.fields.push(field);
  }
  const before = new Map<string, unknown>();
  for (const w of prev['workflows'] as unknown[]) {
    const name = (w as { name?: unknown } | null)?.name;
    before.set(typeof name === 'string' ? name : `(unnamed ${before.size})`, w);
  }
  for (const w of next.workflows) {
    if (!before.has(w.name)) drift.added.push(w.name);
    else if (canonicalStringify(before.get(w.name)) !== canonicalStringify(w)) drift.changed.push(w.name);
  }
  const nextSet = new Set(nextNames);
  drift.removed = [...before.keys()].filter((n) => !nextSet.has(n)).sort();
  drift.upToDate = drift.fields.length === 0 && drift.added.length === 0 && drift.removed.length === 0 && drift.changed.length === 0;
  return drift;
}

/** One line naming what differs, for `--check` and errors. */
export function describeDrift(drift: LockDrift, lockRelPath: string): string {
  if (drift.missing) return `${lockRelPath} does not exist`;
  if (drift.unreadable !== undefined) return `${lockRelPath} is not a readable lock (${drift.unreadable})`;
  const parts: string[] = [];
  if (drift.changed.length > 0) parts.push(`changed: ${drift.changed.join(', ')}`);
  if (drift.added.length > 0) parts.push(`not in the lock: ${drift.added.join(', ')}`);
  if (drift.removed.length > 0) parts.push(`no longer defined: ${drift.removed.join(', ')}`);
  const fields = drift.fields.filter((f) => f !== 'contentHash' || parts.length === 0);
  if (fields.length > 0) parts.push(`lock fields: ${fields.join(', ')}`);
  if (parts.length === 0) return drift.identical ? `${lockRelPath} is up to date` : `${lockRelPath} has the same content but different formatting`;
  return `${lockRelPath} is out of date (${parts.join('; ')})`;
}

/** Spec Versioning 1: compiling at a breaking version newer than the previous lock's says so. */
export function breakingVersionNotice(previousText: string | undefined, next: Lock): string | undefined {
  const nextMin = next.minReaderVersion;
  if (nextMin === undefined || !BREAKING_LOCK_VERSIONS.includes(nextMin)) return undefined;
  let prevMin: number;
  if (previousText === undefined) {
    prevMin = Math.min(...BREAKING_LOCK_VERSIONS);
  } else {
    try {
      const value = (JSON.parse(previousText) as { minReaderVersion?: unknown } | null)?.minReaderVersion;
      prevMin = typeof value === 'number' ? value : 0;
    } catch {
      prevMin = 0;
    }
  }
  if (nextMin <= prevMin) return undefined;
  const why = nextMin === ORG_WIDE_APPROVAL_LOCK_VERSION ? ' because an organization-wide workflow declares approval' : '';
  return (
    `notice: this lock needs an orchestrator that reads lock schema ${nextMin} or newer (minReaderVersion ${nextMin}${prevMin > 0 ? `, was ${prevMin}` : ''})${why}; ` +
    'older orchestrators reject it as "requires a newer orchestrator": upgrade them before pushing'
  );
}

function dedupeWarnings(warnings: readonly HashWarning[]): HashWarning[] {
  const seen = new Set<string>();
  const out: HashWarning[] = [];
  for (const w of warnings) {
    const key = `${w.code}\0${w.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(w);
  }
  return out;
}

async function writeAtomically(file: string, text: string): Promise<void> {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await writeFile(temp, text, 'utf8');
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw new InputError('SVC_ERR_COMPILE_WRITE_FAILED', `cannot write ${file}: ${messageOf(error)}`, { cause: error });
  }
}

async function entryFor(
  loaded: LoadedWorkflow,
  hasher: ReturnType<typeof createTreeHasher>,
  svcRel: string,
): Promise<{ entry: LockWorkflow; files: string[]; warnings: HashWarning[] }> {
  const base = { sourcePath: loaded.sourcePath, exportName: loaded.exportName };
  // hashFiles must be validated before it is hashed: a first pass with a placeholder hash does that.
  const declared = (loaded.definition.options as { hashFiles?: unknown }).hashFiles !== undefined;
  const hashFiles = declared ? workflowToLockEntry(loaded.definition, { ...base, contentHash: PLACEHOLDER_HASH }).hashFiles : undefined;
  const hashed = await hasher.hashWorkflow(hashFiles);
  const entry = workflowToLockEntry(loaded.definition, {
    ...base,
    contentHash: hashed.contentHash,
    ...(hashed.resolvedHashFiles === undefined ? {} : { resolvedHashFiles: hashed.resolvedHashFiles }),
  });
  refuseUnhonoured(entry, loaded.sourcePath, null);
  const files = [...hashed.files.map((f) => `${svcRel}/${f.path}`), ...(hashed.resolvedHashFiles ?? [])];
  return { entry, files, warnings: hashed.warnings };
}

/** A lock that asks for what the runtime would silently not do is never written. */
function refuseUnhonoured(entry: LockWorkflow, sourcePath: string, packageManager?: string | null): void {
  const unhonoured = [...unhonouredFeatures(entry), ...(packageManager === null ? [] : unhonouredInstall(entry, packageManager))];
  if (unhonoured.length === 0) return;
  new CompileScope(sourcePath, entry.name).fail(
    CompileErrorCode.unhonouredFeature,
    unhonoured[0]!.path,
    `uses what this version of svc cannot carry out, so no lock is written: ${describeUnhonoured(unhonoured)}. Remove ${unhonoured.length === 1 ? 'it' : 'them'} until svc supports ${unhonoured.length === 1 ? 'it' : 'them'}`,
  );
}

/** Compile the repository's workflows into a lock (and write it in `write` mode). */
export async function compileWorkflows(options: CompileOptions): Promise<CompileResult> {
  const repoRoot = path.resolve(options.repoRoot);
  const svcRel = (options.svcDir ?? '.svc').split(path.sep).join('/').replace(/\/+$/, '');
  const mode = options.mode ?? 'write';
  const lockRelPath = `${svcRel}/${LOCK_FILE_NAME}`;
  const lockPath = path.join(repoRoot, svcRel, LOCK_FILE_NAME);

  const loaded = await loadWorkflows({ repoRoot, svcDir: svcRel });
  const hasher = createTreeHasher({ repoRoot, svcDir: svcRel });
  const [results, lockfile, siblings, previousText] = await Promise.all([
    Promise.all(loaded.workflows.map((w) => entryFor(w, hasher, svcRel))),
    lockfileHash(repoRoot, { svcDir: svcRel }),
    siblingsDigest(repoRoot, { svcDir: svcRel }),
    readPrevious(lockPath, lockRelPath),
  ]);
  // The install options depend on the lockfile (found beside the entries): checked once both are known.
  for (const r of results) refuseUnhonoured(r.entry, r.entry.source.split('#')[0]!, lockfile?.split(':')[0]);
  const lock = buildLock({
    source: `${svcRel}/workflows/*.${loaded.mode === 'mjs' ? 'mjs' : 'ts'}#default`,
    workflows: results.map((r) => r.entry),
    ...(lockfile === undefined ? {} : { lockfileHash: lockfile }),
    ...(siblings === undefined ? {} : { siblingsDigest: siblings }),
  });
  const text = serializeLock(lock);
  const drift = compareLocks(previousText, lock, text);
  const notes = [...loaded.notes];
  if (loaded.files.length === 0) notes.push(`no workflow files in ${svcRel}/workflows/*.${loaded.mode}: the lock lists no workflow`);
  const changed = !drift.identical;
  let written = false;
  if (mode === 'write' && changed) {
    await writeAtomically(lockPath, text);
    written = true;
  }
  const notice = mode === 'write' && written ? breakingVersionNotice(previousText, lock) : undefined;
  const byName = new Map(results.map((r) => [r.entry.name, r]));
  return {
    repoRoot,
    lockPath,
    lockRelPath,
    workflowMode: loaded.mode,
    lock,
    text,
    workflows: lock.workflows.map((w) => ({
      name: w.name,
      source: w.source,
      contentHash: w.contentHash,
      jobs: w.jobs.map((j) => j.name),
      files: byName.get(w.name)?.files ?? [],
    })),
    warnings: dedupeWarnings(results.flatMap((r) => r.warnings)),
    notes,
    ...(notice === undefined ? {} : { notice }),
    drift,
    changed,
    written,
  };
}
