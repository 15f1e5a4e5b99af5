import { SVC_ADMIN_CLI } from '../cli/framework/definitions.ts';
import { runCli } from '../cli/framework/run-oclif.ts';

export async function main(argv: string[]): Promise<number> {
  return runCli(SVC_ADMIN_CLI, argv);
}
