// Writes dist/<cli>/oclif.manifest.json for both CLIs after `tsc`: with a manifest oclif reads
// command metadata from the file and loads only the command being run.
import { rmSync, writeFileSync } from 'node:fs';
import type * as RunOclif from '../core/cli/run-oclif.ts';
import type * as Definitions from '../core/cli/definitions.ts';

// The compiled modules, so the manifest describes exactly what dist/ runs.
const dist = new URL('../dist/core/cli/', import.meta.url);
const { loadCliConfig } = (await import(new URL('run-oclif.js', dist).href)) as typeof RunOclif;
const { CLI_DEFINITIONS } = (await import(new URL('definitions.js', dist).href)) as typeof Definitions;

for (const def of CLI_DEFINITIONS) {
  // oclif reads a manifest it finds: the one from the last build would describe the old command set.
  rmSync(`dist/${def.commandsModule.slice(0, def.commandsModule.lastIndexOf('/'))}/oclif.manifest.json`, { force: true });
  const config = await loadCliConfig(def);
  const manifest = (config as unknown as { rootPlugin: { manifest: { commands: Record<string, unknown> } } }).rootPlugin.manifest;
  const dir = def.commandsModule.slice(0, def.commandsModule.lastIndexOf('/'));
  writeFileSync(`dist/${dir}/oclif.manifest.json`, JSON.stringify(manifest) + '\n');
  process.stdout.write(`oclif manifest: ${def.bin}, ${Object.keys(manifest.commands).length} commands\n`);
}
