// `svc hook install`: a git pre-commit hook that recompiles the workflows and stages the lock,
// so every commit carries a lock matching its workflows. The hooks directory comes from git
// (`rev-parse --git-path hooks` honours core.hooksPath and worktrees). A hook we did not write
// is never replaced without `force` (then it is kept as `pre-commit.svc-backup`).
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConflictError, InputError, messageOf } from '../../core/errors.ts';
import { git } from '../preview/local-git.ts';

export const HOOK_MARKER = '# svc-managed: pre-commit';

export interface HookInstallOptions {
  /** Directory the command runs from (inside the work tree). */
  cwd: string;
  /** Directory holding `.svc/` (the project root). */
  projectRoot: string;
  /** How to run svc: absolute node and bin script. */
  node: string;
  bin: string;
  force?: boolean;
}

export interface HookInstallResult {
  path: string;
  /** `installed` (new), `updated` (ours, changed), `unchanged`, `replaced` (a foreign hook, with force). */
  action: 'installed' | 'updated' | 'unchanged' | 'replaced';
  backup?: string;
}

function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function hookScript(options: { relProject: string; node: string; bin: string }): string {
  const cd = options.relProject === '' ? 'cd "$(git rev-parse --show-toplevel)"' : `cd "$(git rev-parse --show-toplevel)"/${shQuote(options.relProject)}`;
  return [
    '#!/bin/sh',
    `${HOOK_MARKER} hook installed by \`svc hook install\` (rerun it to update; delete this file to uninstall).`,
    '# Recompiles .svc/workflows into .svc/svc.lock.json and stages the lock.',
    'set -e',
    cd,
    `SVC_NODE=${shQuote(options.node)}`,
    `SVC_BIN=${shQuote(options.bin)}`,
    'if [ -x "$SVC_NODE" ] && [ -f "$SVC_BIN" ]; then',
    '  "$SVC_NODE" "$SVC_BIN" compile',
    'elif command -v svc >/dev/null 2>&1; then',
    '  svc compile',
    'else',
    '  echo "svc pre-commit hook: svc not found (looked for $SVC_BIN and svc on PATH): reinstall it with svc hook install" >&2',
    '  exit 1',
    'fi',
    'git add -- .svc/svc.lock.json',
    '',
  ].join('\n');
}

export async function installPreCommitHook(options: HookInstallOptions): Promise<HookInstallResult> {
  const top = await git(options.cwd, ['rev-parse', '--show-toplevel']).catch((error: unknown) => {
    throw new InputError('SVC_ERR_HOOK_NOT_A_REPOSITORY', `not inside a git work tree (${messageOf(error)}): run svc hook install in your repository`, { cause: error });
  });
  const relProject = path.relative(top, options.projectRoot).split(path.sep).join('/');
  if (relProject.startsWith('..') || path.isAbsolute(relProject)) {
    throw new InputError('SVC_ERR_HOOK_OUTSIDE_REPOSITORY', `${options.projectRoot} is outside the git work tree ${top}`);
  }
  const hooksDir = path.resolve(options.cwd, await git(options.cwd, ['rev-parse', '--git-path', 'hooks']));
  const file = path.join(hooksDir, 'pre-commit');
  const text = hookScript({ relProject, node: options.node, bin: options.bin });
  const current = await readFile(file, 'utf8').catch((error: { code?: string }) => {
    if (error.code === 'ENOENT') return undefined;
    throw new InputError('SVC_ERR_HOOK_READ_FAILED', `cannot read ${file}: ${messageOf(error)}`, { cause: error });
  });
  let action: HookInstallResult['action'] = 'installed';
  let backup: string | undefined;
  if (current !== undefined) {
    if (current === text) {
      await chmod(file, 0o755);
      return { path: file, action: 'unchanged' };
    }
    if (current.includes(HOOK_MARKER)) {
      action = 'updated';
    } else if (options.force !== true) {
      throw new ConflictError('SVC_ERR_HOOK_FOREIGN', `${file} already exists and was not written by svc: add \`svc compile && git add .svc/svc.lock.json\` to it yourself, or rerun with --force to replace it (it is kept as pre-commit.svc-backup)`, {
        details: { path: file },
      });
    } else {
      action = 'replaced';
      backup = `${file}.svc-backup`;
    }
  }
  try {
    await mkdir(hooksDir, { recursive: true });
    if (backup !== undefined) await writeFile(backup, current ?? '', { mode: 0o755 });
    const temp = `${file}.${process.pid}.tmp`;
    await writeFile(temp, text, { mode: 0o755 });
    await rename(temp, file);
    await chmod(file, 0o755);
  } catch (error) {
    throw new InputError('SVC_ERR_HOOK_WRITE_FAILED', `cannot write ${file}: ${messageOf(error)}`, { cause: error });
  }
  return backup === undefined ? { path: file, action } : { path: file, action, backup };
}
