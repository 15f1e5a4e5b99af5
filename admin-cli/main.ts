import { runCli } from '../cli/framework/run-oclif.ts';

export async function main(argv: string[]): Promise<number> {
  return runCli(
    { bin: 'svc-admin', description: 'svc operator CLI: provision, inspect and maintain an installation', commandsModule: 'admin-cli/commands' },
    argv,
  );
}
