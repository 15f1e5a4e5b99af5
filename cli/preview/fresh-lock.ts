// The committed lock, when it is provably what `svc compile` would write now. Preview is a
// question about the lock the orchestrator will match against; importing every workflow module
// to rebuild it costs most of a preview at a hundred workflows, while proving the lock fresh only
// reads `.svc/`. Fresh means: the lock parses and its own content hash holds, it was written with
// this version's lock and compile schemas, and every workflow's content hash — a digest of the
// whole `.svc/` tree and of its `hashFiles` — equals the one computed from the files now. Any
// edit under `.svc/` (a workflow, a helper it imports, a new or deleted file) changes the tree
// digest, and the caller compiles in memory as before.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { COMPILE_SCHEMA_VERSION, LOCK_SCHEMA_VERSION, type Lock } from '../../schemas/lock.ts';
import { createTreeHasher } from '../../workflow/hash/index.ts';
import { LOCK_FILE_NAME, parseLock } from '../../workflow/lock/lock-file.ts';

export interface FreshLock {
  lock: Lock;
  /** Hash warnings (unreadable or skipped files), as the compiler would report them. */
  warnings: string[];
}

/** The committed lock if it is fresh, otherwise undefined (never throws for a stale or bad lock). */
export async function readFreshLock(repoRoot: string, svcRel = '.svc'): Promise<FreshLock | undefined> {
  let lock: Lock;
  try {
    lock = parseLock(await readFile(path.join(repoRoot, svcRel, LOCK_FILE_NAME), 'utf8'));
  } catch {
    return undefined; // missing, edited by hand or invalid: the compiler explains that better
  }
  // No workflow leaves no content hash to prove the tree with.
  if (lock.schemaVersion !== LOCK_SCHEMA_VERSION || lock.workflows.length === 0) return undefined;
  if (lock.workflows.some((w) => w.compileSchemaVersion !== COMPILE_SCHEMA_VERSION)) return undefined;
  try {
    const hasher = createTreeHasher({ repoRoot, svcDir: svcRel });
    const warnings = new Map<string, string>();
    for (const w of lock.workflows) {
      const hashed = await hasher.hashWorkflow(w.hashFiles);
      if (hashed.contentHash !== w.contentHash) return undefined;
      for (const warning of hashed.warnings) warnings.set(`${warning.code}\0${warning.path}`, warning.message);
    }
    return { lock, warnings: [...warnings.values()] };
  } catch {
    return undefined; // a hashFiles pattern that no longer resolves, say: compile reports it
  }
}
