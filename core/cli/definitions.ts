// The two oclif CLIs of the package.
import type { CliDefinition } from './run-oclif.ts';

export const SVC_CLI: CliDefinition = {
  bin: 'svc',
  description: 'svc developer CLI: author, compile, preview and run CI workflows',
  commandsModule: 'cli/commands',
};

export const SVC_ADMIN_CLI: CliDefinition = {
  bin: 'svc-admin',
  description: 'svc operator CLI: provision, inspect and maintain an installation',
  commandsModule: 'admin-cli/commands',
};

export const CLI_DEFINITIONS: readonly CliDefinition[] = [SVC_CLI, SVC_ADMIN_CLI];
