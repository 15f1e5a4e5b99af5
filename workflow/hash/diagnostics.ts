// Error codes and warnings of the compiler's hashing. Errors are thrown as InputError with one
// of these stable codes; warnings are returned (never printed here) so the CLI decides how to
// show them and tests can assert on them.

export const HashErrorCode = {
  svcDirMissing: 'SVC_ERR_COMPILE_SVC_DIR_MISSING',
  pathOutsideRepo: 'SVC_ERR_COMPILE_PATH_OUTSIDE_REPO',
  symlinkDangling: 'SVC_ERR_COMPILE_SYMLINK_DANGLING',
  symlinkLoop: 'SVC_ERR_COMPILE_SYMLINK_LOOP',
  unsupportedFile: 'SVC_ERR_COMPILE_UNSUPPORTED_FILE',
  readFailed: 'SVC_ERR_COMPILE_READ_FAILED',
  tooManyFiles: 'SVC_ERR_COMPILE_TOO_MANY_FILES',
  hashFilesPattern: 'SVC_ERR_COMPILE_HASHFILES_PATTERN',
  hashFilesOutsideRepo: 'SVC_ERR_COMPILE_HASHFILES_OUTSIDE_REPO',
  packageJsonInvalid: 'SVC_ERR_COMPILE_PACKAGE_JSON_INVALID',
  siblingNotFound: 'SVC_ERR_COMPILE_SIBLING_NOT_FOUND',
  siblingOutsideRepo: 'SVC_ERR_COMPILE_SIBLING_OUTSIDE_REPO',
  workspaceAmbiguous: 'SVC_ERR_COMPILE_WORKSPACE_AMBIGUOUS',
  siblingsGit: 'SVC_ERR_COMPILE_SIBLINGS_GIT',
} as const;
export type HashErrorCode = (typeof HashErrorCode)[keyof typeof HashErrorCode];

export type HashWarningCode =
  /** A followed symlink whose link text is an absolute path (breaks on other checkouts). */
  | 'symlink-absolute-target'
  /** A followed symlink whose target lies outside the parent of `.svc/`. */
  | 'symlink-outside-parent'
  /** `.svcignore` lists a pattern matching itself; it stays covered anyway. */
  | 'svcignore-self'
  /** A `hashFiles` pattern matched no file; hashed as an empty set. */
  | 'hashfiles-no-match'
  /** A sibling package has no git-tracked file, so nothing of it is digested. */
  | 'sibling-untracked';

export interface HashWarning {
  code: HashWarningCode;
  /** POSIX path the warning is about (relative to `.svc/`, or to the repo root for hashFiles/siblings). */
  path: string;
  message: string;
}
