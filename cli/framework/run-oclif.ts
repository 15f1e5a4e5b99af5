// Both CLIs (svc, svc-admin) live in one npm package, so each carries its own oclif settings
// instead of the package.json "oclif" block, and names its command table explicitly.
import { readFileSync } from 'node:fs';
import { Config, flush, handle, run } from '@oclif/core';

export interface CliDefinition {
  bin: string;
  description: string;
  /** Path of the module exporting COMMANDS, relative to the package root, without extension. */
  commandsModule: string;
}

function packageRoot(): string {
  // cli/framework/run-oclif.(ts|js) → two or three levels up (dist/ adds one).
  const here = new URL('.', import.meta.url);
  const up = import.meta.url.endsWith('.ts') ? '../../' : '../../../';
  return new URL(up, here).pathname;
}

export async function runCli(def: CliDefinition, argv: string[]): Promise<number> {
  const root = packageRoot();
  const compiled = !import.meta.url.endsWith('.ts');
  const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as Record<string, unknown>;
  const target = compiled ? `./dist/${def.commandsModule}.js` : `./${def.commandsModule}.ts`;
  const config = await Config.load({
    root,
    pjson: {
      ...pkg,
      description: def.description,
      oclif: {
        bin: def.bin,
        dirname: 'svc',
        topicSeparator: ' ',
        commands: { strategy: 'explicit', target, identifier: 'COMMANDS' },
      },
    } as never,
  });
  try {
    await run(argv, config);
    await flush();
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    await handle(error as Error);
    return typeof process.exitCode === 'number' ? process.exitCode : 1;
  }
}
