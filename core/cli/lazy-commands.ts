// A command table whose classes load on first access. oclif's explicit strategy imports the whole
// table on every run; with a manifest (written into dist/ at build time) it reads only the
// invoked command's entry, so a getter here means running `svc compile` never loads the
// orchestrator client, KMS or database code of other commands. Node 24 `require()`s ES modules
// synchronously. Running from the .ts sources there is no manifest (oclif reads every entry
// anyway) and test runners may hook `require` for .ts, so sources are imported up front.
import { createRequire } from 'node:module';
import type { Command } from '@oclif/core';

type Table = Readonly<Record<string, string>>;

/** `table`: command id → module path relative to `from`, without extension. */
export async function loadCommands(from: string, table: Table): Promise<Record<string, Command.Class>> {
  const commands: Record<string, Command.Class> = {};
  if (from.endsWith('.ts')) {
    const loaded = await Promise.all(
      Object.entries(table).map(async ([id, path]) => [id, ((await import(new URL(`${path}.ts`, from).href)) as { default: Command.Class }).default] as const),
    );
    for (const [id, command] of loaded) commands[id] = command;
    return commands;
  }
  const require = createRequire(from);
  for (const [id, path] of Object.entries(table)) {
    let loaded: Command.Class | undefined;
    Object.defineProperty(commands, id, {
      enumerable: true,
      get: () => (loaded ??= (require(`${path}.js`) as { default: Command.Class }).default),
    });
  }
  return commands;
}
