import { SVC_ADMIN_CLI } from '../core/cli/definitions.ts';
import { runCli } from '../core/cli/run-oclif.ts';

export async function main(argv: string[]): Promise<number> {
  return runCli(SVC_ADMIN_CLI, argv);
}
