// `ctx.$`: runs a program through execa's template form, never through a shell. Static text is
// split on spaces into arguments and each interpolated value is exactly one argument (arrays one
// per item), so a value such as `; rm -rf /` is passed literally.
// execa (a 270 kB bundle) loads at the first command: every workflow file imports the SDK, and
// `svc compile`/`svc preview` run none.
import type { ExecaError as ExecaFailure } from 'execa';
import { InputError, SvcError } from '../core/errors.ts';
import type { Shell, ShellOptions, ShellResult, ShellValue } from './context.ts';

export interface ShellBase {
  readonly cwd: string;
  /** Read at each call so setEnv/addPath apply to later commands. */
  readonly env: () => Readonly<Record<string, string | undefined>>;
}

/** A command exited non-zero (or could not start) while `reject` was on. */
export class ShellCommandError extends SvcError {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | undefined;
  constructor(message: string, result: { stdout: string; stderr: string; exitCode: number | undefined }, cause: unknown) {
    super('SVC_ERR_STEP_COMMAND_FAILED', message, { cause, details: { exitCode: result.exitCode } });
    this.stdout = result.stdout;
    this.stderr = result.stderr;
    this.exitCode = result.exitCode;
  }
}

export function isTemplate(value: unknown): value is TemplateStringsArray {
  return Array.isArray(value) && Array.isArray((value as unknown as { raw?: unknown }).raw);
}

export function definedEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}

/** A value as shell output text (undefined reads as empty). */
export function text(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined ? '' : String(value);
}

export function createShell(base: ShellBase, overrides: ShellOptions = {}): Shell {
  const run = async (template: TemplateStringsArray, values: readonly ShellValue[]): Promise<ShellResult> => {
    for (const value of values) {
      const items = Array.isArray(value) ? value : [value];
      for (const item of items) {
        if (typeof item !== 'string' && typeof item !== 'number') {
          throw new InputError('SVC_ERR_STEP_SHELL_VALUE', `ctx.$ accepts strings, numbers and arrays of them; got ${typeof item}`);
        }
      }
    }
    const reject = overrides.reject ?? true;
    const { execa, ExecaError } = await import('execa');
    const bound = execa({
      cwd: overrides.cwd ?? base.cwd,
      env: definedEnv({ ...base.env(), ...overrides.env }),
      extendEnv: false,
      reject: false,
      stripFinalNewline: true,
      ...(overrides.input === undefined ? { stdin: 'ignore' as const } : { input: overrides.input }),
      ...(overrides.timeout === undefined ? {} : { timeout: overrides.timeout }),
    });
    const result = await bound(template, ...(values as readonly (string | number | readonly (string | number)[])[]));
    const out = { stdout: text(result.stdout), stderr: text(result.stderr), exitCode: result.exitCode };
    if (result.failed) {
      if (reject) {
        const reason = (result as unknown) instanceof ExecaError ? (result as unknown as ExecaFailure).shortMessage : `command failed: ${result.command}`;
        throw new ShellCommandError(reason, out, result);
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
    return createShell(base, { ...overrides, ...first, env: { ...overrides.env, ...first.env } });
  }) as Shell;
  return shell;
}
