// `.svc/.svcignore`: which files under `.svc/` stay out of the workflow content hash.
// Matching is gitignore's, done by the `ignore` library; this file only adds the three rules
// the spec layers on top: the file replaces the defaults, `svc.lock.json` is always excluded
// (it carries the hash), and `.svcignore` itself is always covered.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { InputError, messageOf } from '../../core/errors.ts';
import { HashErrorCode, type HashWarning } from './diagnostics.ts';
import { errnoOf } from './repo-paths.ts';

export const SVCIGNORE_FILE = '.svcignore';
export const LOCK_FILE = 'svc.lock.json';

/** The built-in list, used when `.svc/.svcignore` does not exist. */
export const DEFAULT_SVCIGNORE_PATTERNS: readonly string[] = Object.freeze([
  'node_modules/',
  'types/',
  '.npmrc',
  'package-lock.json',
  'pnpm-lock.yaml',
  LOCK_FILE,
]);

/** What `svc init` writes to `.svc/.svcignore`: the default list, with a note on the rules. */
export const DEFAULT_SVCIGNORE = [
  '# Files under .svc/ left out of the workflow content hash (gitignore syntax, relative to .svc/).',
  '# This file replaces the built-in list entirely. svc.lock.json is always excluded and',
  '# .svcignore itself is always covered, whatever is listed here.',
  ...DEFAULT_SVCIGNORE_PATTERNS,
  '',
].join('\n');

export interface SvcignoreMatcher {
  /** `default` when `.svc/.svcignore` is absent, `file` when its content replaced the defaults. */
  readonly source: 'default' | 'file';
  /**
   * Whether a POSIX path relative to `.svc/` is excluded. Directories (including symlinks to
   * directories) must be passed with a trailing `/`.
   */
  ignores(relPath: string): boolean;
  readonly warnings: readonly HashWarning[];
}

/** Build the matcher from the text of `.svc/.svcignore`, or from the defaults when `undefined`. */
export function createSvcignoreMatcher(text: string | undefined): SvcignoreMatcher {
  const user: Ignore = ignore();
  if (text === undefined) user.add([...DEFAULT_SVCIGNORE_PATTERNS]);
  else user.add(text.replace(/^\uFEFF/, ''));
  // Kept apart from the user's rules so a `!svc.lock.json` line cannot re-include the lock.
  const forced: Ignore = ignore().add(LOCK_FILE);
  const warnings: HashWarning[] = [];
  if (text !== undefined && user.ignores(SVCIGNORE_FILE)) {
    warnings.push({
      code: 'svcignore-self',
      path: SVCIGNORE_FILE,
      message: `.svc/${SVCIGNORE_FILE} lists a pattern that matches itself; it stays covered by the content hash anyway`,
    });
  }
  return {
    source: text === undefined ? 'default' : 'file',
    warnings,
    ignores(relPath: string): boolean {
      if (relPath === SVCIGNORE_FILE) return false;
      return forced.ignores(relPath) || user.ignores(relPath);
    },
  };
}

/** Read `.svc/.svcignore` (if any) and build the matcher. */
export async function loadSvcignore(svcDirAbs: string): Promise<SvcignoreMatcher> {
  const file = path.join(svcDirAbs, SVCIGNORE_FILE);
  let text: string | undefined;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT') {
      throw new InputError(HashErrorCode.readFailed, `cannot read ${file}: ${messageOf(error)}`, { cause: error, details: { path: SVCIGNORE_FILE } });
    }
  }
  return createSvcignoreMatcher(text);
}
