import { SVC_CLI } from '../core/cli/definitions.ts';
import { runCli } from '../core/cli/run-oclif.ts';
import { fastCommand, runFast } from './fast-path.ts';

const HELP = new Set(['--help', '-h']);

/**
 * `svc admin <command> …` hands every argument to svc-admin, `--help` included. oclif answers a
 * `--help` that comes before any `--` with the help of the command it resolved (`svc admin`'s
 * own), so the arguments go after a `--` (which `svc admin` drops). `svc admin --help` alone
 * stays this front's own help (it says how to reach svc-admin's: `svc admin -- --help`).
 */
export function svcArgv(argv: readonly string[]): string[] {
  const first = argv[1];
  if (argv[0] !== 'admin' || first === undefined || first === '--' || HELP.has(first)) return [...argv];
  return ['admin', '--', ...argv.slice(1)];
}

export async function main(argv: string[]): Promise<number> {
  const fast = fastCommand(argv);
  if (fast !== undefined) return runFast(fast);
  return runCli(SVC_CLI, svcArgv(argv));
}
