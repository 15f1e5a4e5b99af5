import { runCli } from './framework/run-oclif.ts';

export async function main(argv: string[]): Promise<number> {
  return runCli(
    { bin: 'svc', description: 'svc developer CLI: author, compile, preview and run CI workflows', commandsModule: 'cli/commands' },
    argv,
  );
}
