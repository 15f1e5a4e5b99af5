// git for the post-receive hook: argument arrays only, run against one repository directory.
import { execa } from 'execa';
import { SvcError } from '../../core/errors.ts';

export interface HookGit {
  readonly gitDir: string;
  /** stdout of a git command that must succeed (trailing newline kept). */
  run(args: readonly string[], options?: { input?: string }): Promise<string>;
  /** Exit code and stdout, for commands whose failure is an answer. */
  tryRun(args: readonly string[], options?: { input?: string }): Promise<{ ok: boolean; stdout: string; stderr: string }>;
}

export function hookGit(gitDir: string, env: NodeJS.ProcessEnv = process.env): HookGit {
  // GIT_DIR names the repository explicitly; other GIT_* variables a hook inherits (object
  // directories of a quarantine, for example) still apply, as git intends for hooks.
  const childEnv: NodeJS.ProcessEnv = { ...env, GIT_DIR: gitDir, LC_ALL: 'C', GIT_TERMINAL_PROMPT: '0' };
  const tryRun = async (args: readonly string[], options: { input?: string } = {}) => {
    const result = await execa('git', [...args], {
      cwd: gitDir,
      env: childEnv,
      extendEnv: false,
      reject: false,
      timeout: 10_000,
      stripFinalNewline: false,
      maxBuffer: 16 * 1024 * 1024,
      ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' as const }),
    });
    return { ok: result.exitCode === 0, stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? '') };
  };
  return {
    gitDir,
    tryRun,
    async run(args, options) {
      const result = await tryRun(args, options);
      if (!result.ok) {
        const reason = result.stderr.split('\n').find((l) => l.trim() !== '') ?? 'failed';
        throw new SvcError('SVC_ERR_HOOK_GIT', `git ${args[0]} failed in ${gitDir}: ${reason.trim().slice(0, 300)}`);
      }
      return result.stdout;
    },
  };
}
