import { SVC_CLI } from './framework/definitions.ts';
import { runCli } from './framework/run-oclif.ts';

export async function main(argv: string[]): Promise<number> {
  return runCli(SVC_CLI, argv);
}
