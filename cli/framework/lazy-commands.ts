// A command table whose classes load on first access. oclif's explicit strategy imports the whole
// table on every run; with a manifest (written at build time) it reads only the invoked command's
// entry, so a getter here means running `svc compile` never loads the orchestrator client, KMS or
// database code of other commands. Node 24 `require()`s ES modules synchronously.
import { createRequire } from 'node:module';
import type { Command } from '@oclif/core';

/** `table`: command id → module path relative to `from`, without extension. */
export function lazyCommands(from: string, table: Readonly<Record<string, string>>): Record<string, Command.Class> {
  const require = createRequire(from);
  const ext = from.endsWith('.ts') ? '.ts' : '.js';
  const commands: Record<string, Command.Class> = {};
  for (const [id, path] of Object.entries(table)) {
    let loaded: Command.Class | undefined;
    Object.defineProperty(commands, id, {
      enumerable: true,
      get: () => (loaded ??= (require(`${path}${ext}`) as { default: Command.Class }).default),
    });
  }
  return commands;
}
