// Running `git` for the developer commands (preview, init, hook install, doctor): argument
// arrays only, never a shell string; stdout trimmed. `tryGit` answers `undefined` when git is
// missing or the command fails (not a repository, no such ref), which callers treat as "unknown".
import { execFile } from 'node:child_process';
import { UnavailableError } from '../../core/errors.ts';

const TIMEOUT_MS = 30_000;

function run(cwd: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile('git', [...args], { cwd, timeout: TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(Object.assign(error, { stderr }));
      else resolve({ stdout, stderr });
    });
  });
}

export async function git(cwd: string, args: readonly string[]): Promise<string> {
  try {
    return (await run(cwd, args)).stdout.replace(/\n$/, '');
  } catch (error) {
    const e = error as { code?: unknown; stderr?: string; message: string };
    if (e.code === 'ENOENT') throw new UnavailableError('SVC_ERR_GIT_MISSING', 'git is not installed or not on PATH: install git');
    const detail = (e.stderr ?? '').trim().split('\n')[0] || e.message;
    throw new UnavailableError('SVC_ERR_GIT_FAILED', `git ${args.join(' ')} failed: ${detail}`, { cause: error });
  }
}

export async function tryGit(cwd: string, args: readonly string[]): Promise<string | undefined> {
  try {
    return await git(cwd, args);
  } catch {
    return undefined;
  }
}

/** The work tree's top directory, or `undefined` outside a git repository. */
export async function gitTopLevel(cwd: string): Promise<string | undefined> {
  return tryGit(cwd, ['rev-parse', '--show-toplevel']);
}
