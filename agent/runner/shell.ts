// `ctx.$` for real jobs. Same contract as the SDK shell (sdk/shell.ts): no shell, the template's
// text split on spaces, each interpolated value exactly one argument, ShellCommandError on a
// non-zero exit unless `reject: false`. On top of it: output lines stream to the agent as they
// come (stdout and stderr apart), and the command runs in its own process group tied to the
// activity's AbortSignal, so a cancel kills the program and everything it started.
import { execa, ExecaError } from 'execa';
import { InputError } from '../../core/errors.ts';
import type { Shell, ShellOptions, ShellResult, ShellValue } from '../../sdk/context.ts';
import { definedEnv, isTemplate, ShellCommandError, text } from '../../sdk/shell.ts';
import type { Activity } from './activity.ts';
import { RunnerErrorCode } from './errors.ts';
import type { LogSink } from './log-capture.ts';

export interface RunnerShellBase {
  readonly cwd: string;
  /** Read at each call so setEnv/addPath apply to later commands. */
  readonly env: () => Readonly<Record<string, string | undefined>>;
  readonly activity: Activity;
  readonly sink: LogSink;
}

/** Milliseconds between SIGTERM to a cancelled command's group and SIGKILL. */
export const KILL_GRACE_MS = 2_000;

export function createRunnerShell(base: RunnerShellBase, overrides: ShellOptions = {}): Shell {
  // Async, so a command printing faster than the agent reads is paused (its pipe stops being
  // read) instead of piling its lines up in the runner's memory.
  const tap = (stream: 'stdout' | 'stderr') =>
    async function* (line: unknown) {
      const backlog = base.sink.ready();
      if (backlog !== undefined) await backlog;
      base.sink.line(base.activity.label, stream, text(line));
      yield line;
    };
  const run = async (template: TemplateStringsArray, values: readonly ShellValue[]): Promise<ShellResult> => {
    for (const value of values) {
      const items = Array.isArray(value) ? value : [value];
      for (const item of items) {
        if (typeof item !== 'string' && typeof item !== 'number') {
          throw new InputError('SVC_ERR_STEP_SHELL_VALUE', `ctx.$ accepts strings, numbers and arrays of them; got ${typeof item}`);
        }
      }
    }
    if (base.activity.signal.aborted) {
      throw new InputError(RunnerErrorCode.cancelled, `ctx.$ called after ${base.activity.label} was cancelled`);
    }
    const reject = overrides.reject ?? true;
    const bound = execa({
      cwd: overrides.cwd ?? base.cwd,
      env: definedEnv({ ...base.env(), ...overrides.env }),
      extendEnv: false,
      reject: false,
      stripFinalNewline: true,
      cancelSignal: base.activity.signal,
      killDescendants: true,
      forceKillAfterDelay: KILL_GRACE_MS,
      stdout: [tap('stdout')],
      stderr: [tap('stderr')],
      ...(overrides.input === undefined ? { stdin: 'ignore' as const } : { input: overrides.input }),
      ...(overrides.timeout === undefined ? {} : { timeout: overrides.timeout }),
    });
    const subprocess = bound(template, ...(values as readonly (string | number | readonly (string | number)[])[]));
    base.activity.subprocesses.add(subprocess);
    let result;
    try {
      result = await subprocess;
    } finally {
      base.activity.subprocesses.delete(subprocess);
    }
    const out = { stdout: text(result.stdout), stderr: text(result.stderr), exitCode: result.exitCode };
    if (result.failed) {
      if (reject) {
        const reason = (result as unknown) instanceof ExecaError ? (result as unknown as ExecaError).shortMessage : `command failed: ${result.command}`;
        throw new ShellCommandError(reason, { ...out, exitCode: out.exitCode }, result);
      }
      return { ...out, exitCode: out.exitCode ?? -1 };
    }
    return { ...out, exitCode: out.exitCode ?? 0 };
  };
  const shell = ((first: TemplateStringsArray | ShellOptions, ...values: readonly ShellValue[]) => {
    if (isTemplate(first)) return run(first, values);
    if (typeof first !== 'object' || first === null) {
      throw new InputError('SVC_ERR_STEP_SHELL_USAGE', 'ctx.$ is a tagged template (ctx.$`cmd ${arg}`) or takes an options object');
    }
    return createRunnerShell(base, { ...overrides, ...first, env: { ...overrides.env, ...first.env } });
  }) as Shell;
  return shell;
}
