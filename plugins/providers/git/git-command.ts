// Running git for the `git` provider: argument arrays only (never a shell), a clean environment
// (no inherited GIT_DIR and friends, no prompts), a protocol allow-list, and https credentials
// passed through GIT_CONFIG_* variables so they appear neither in argv nor on disk.
import { execa } from 'execa';

export interface GitRunOptions {
  gitBinary: string;
  /** The repository (a bare mirror) git works in. */
  gitDir: string;
  timeoutMs: number;
  /** Extra `git -c` style settings for this call. */
  config?: ReadonlyArray<readonly [string, string]>;
  /** Raw stdout bytes instead of text. */
  binary?: boolean;
  /** An object directory git may also read from (GIT_ALTERNATE_OBJECT_DIRECTORIES): a local remote's. */
  alternates?: string;
  maxBuffer?: number;
}

export interface GitResult<T extends string | Uint8Array> {
  exitCode: number;
  stdout: T;
  stderr: string;
  timedOut: boolean;
}

/** Variables of the calling process that would point git somewhere else. */
const DROPPED = /^GIT_(DIR|WORK_TREE|INDEX_FILE|OBJECT_DIRECTORY|ALTERNATE_OBJECT_DIRECTORIES|CONFIG_PARAMETERS|CONFIG_COUNT|CONFIG_KEY_\d+|CONFIG_VALUE_\d+|NAMESPACE|CEILING_DIRECTORIES|QUARANTINE_PATH|EXEC_PATH|TRACE.*)$/;

/** Transports git may use; helper transports (`ext::`, `fd::`) and unknown ones are refused by git itself. */
const PROTOCOLS: ReadonlyArray<readonly [string, string]> = [
  ['protocol.allow', 'never'],
  ['protocol.https.allow', 'always'],
  ['protocol.http.allow', 'always'],
  ['protocol.ssh.allow', 'always'],
  ['protocol.git.allow', 'always'],
  ['protocol.file.allow', 'always'],
];

/** The environment every git process of the provider runs with (one-shot or long-lived). */
export function gitEnvironment(options: Pick<GitRunOptions, 'gitDir' | 'config' | 'alternates'>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!DROPPED.test(key)) env[key] = value;
  const config = [...PROTOCOLS, ['core.hooksPath', '/dev/null'] as const, ...(options.config ?? [])];
  env['GIT_CONFIG_COUNT'] = String(config.length);
  config.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  env['GIT_DIR'] = options.gitDir;
  if (options.alternates !== undefined) env['GIT_ALTERNATE_OBJECT_DIRECTORIES'] = options.alternates;
  env['GIT_TERMINAL_PROMPT'] = '0';
  env['GIT_ASKPASS'] = 'true';
  env['SSH_ASKPASS'] = 'true';
  env['GCM_INTERACTIVE'] = 'never';
  // Never wait on a host-key or passphrase prompt; an operator's own GIT_SSH_COMMAND wins.
  env['GIT_SSH_COMMAND'] ??= 'ssh -o BatchMode=yes';
  env['LC_ALL'] = 'C';
  return env;
}

export async function runGit(args: readonly string[], options: GitRunOptions & { binary: true }): Promise<GitResult<Uint8Array>>;
export async function runGit(args: readonly string[], options: GitRunOptions & { binary?: false }): Promise<GitResult<string>>;
export async function runGit(args: readonly string[], options: GitRunOptions): Promise<GitResult<string | Uint8Array>> {
  const result = await execa(options.gitBinary, [...args], {
    cwd: options.gitDir,
    env: gitEnvironment(options),
    extendEnv: false,
    stdin: 'ignore',
    reject: false,
    timeout: options.timeoutMs,
    forceKillAfterDelay: 2000,
    maxBuffer: options.maxBuffer ?? 64 * 1024 * 1024,
    stripFinalNewline: false,
    encoding: options.binary ? 'buffer' : 'utf8',
  });
  return {
    exitCode: typeof result.exitCode === 'number' ? result.exitCode : -1,
    stdout: result.stdout as string | Uint8Array,
    stderr: typeof result.stderr === 'string' ? result.stderr : '',
    timedOut: result.timedOut === true,
  };
}

/** The first meaningful line of git's stderr, for error messages. */
export function firstLine(stderr: string): string {
  const line = stderr.split('\n').find((l) => l.trim() !== '' && !l.startsWith('hint:')) ?? '';
  return line.trim().slice(0, 300);
}
