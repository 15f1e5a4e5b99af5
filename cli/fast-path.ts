// `svc compile` and `svc preview <event>` without oclif. They run on every commit (the pre-commit
// hook's `svc compile --check`) and from editors, and loading oclif (its config, manifest, parser
// and error modules, ~90 files) was about a third of a one-workflow compile's CPU. Only the plain
// human forms are taken here: `--json`, `--help`, any other flag, a repeated flag, `--`, an
// unexpected argument, or oclif's environment switches (SVC_CONTENT_TYPE, DEBUG) go to oclif
// as before, so its parsing, help and JSON output stay the one source of those behaviours.
import { errorText, exitCodeFor } from '../core/cli/error-text.ts';

type Parsed = { command: 'compile'; flags: { check: boolean; verbose: boolean; 'fail-on-drift': boolean } } | { command: 'preview'; event: string; branch?: string; debug: boolean };

const COMPILE_FLAGS = new Set(['--check', '--verbose', '--fail-on-drift']);

function parseCompile(rest: readonly string[]): Parsed | undefined {
  if (new Set(rest).size !== rest.length || !rest.every((arg) => COMPILE_FLAGS.has(arg))) return undefined;
  return { command: 'compile', flags: { check: rest.includes('--check'), verbose: rest.includes('--verbose'), 'fail-on-drift': rest.includes('--fail-on-drift') } };
}

function parsePreview(rest: readonly string[]): Parsed | undefined {
  let event: string | undefined;
  let branch: string | undefined;
  let debug = false;
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--debug' && !debug) debug = true;
    else if (arg === '--branch' && branch === undefined && i + 1 < rest.length && !rest[i + 1]!.startsWith('-') && rest[i + 1] !== '') branch = rest[++i];
    else if (arg.startsWith('--branch=') && branch === undefined && arg.length > '--branch='.length) branch = arg.slice('--branch='.length);
    else if (!arg.startsWith('-') && arg !== '' && event === undefined) event = arg;
    else return undefined;
  }
  if (event === undefined) return undefined;
  return { command: 'preview', event, debug, ...(branch === undefined ? {} : { branch }) };
}

/** The command line when the fast path can answer it exactly as oclif would; otherwise undefined. */
export function fastCommand(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Parsed | undefined {
  if (env['SVC_CONTENT_TYPE'] !== undefined || env['DEBUG'] !== undefined) return undefined;
  const [command, ...rest] = argv;
  if (command === 'compile') return parseCompile(rest);
  if (command === 'preview') return parsePreview(rest);
  return undefined;
}

// console.log as oclif's `this.log` (it also ignores a closed stdout: `svc preview push | head -1`).
const out = { log: (line: string): void => console.log(line), json: false };

/** Run a command `fastCommand` accepted: the exit code, errors printed as the oclif command prints them. */
export async function runFast(parsed: Parsed): Promise<number> {
  try {
    if (parsed.command === 'compile') {
      const { runCompile } = await import('./compiler/compile-command.ts');
      await runCompile(parsed.flags, out);
    } else {
      const { runPreview } = await import('./preview/preview-command.ts');
      await runPreview({ event: parsed.event, branch: parsed.branch, debug: parsed.debug }, out);
    }
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    process.stderr.write(`${errorText(error)}\n`);
    return exitCodeFor(error);
  }
}
