// Both CLIs (svc, svc-admin) live in one npm package, so each carries its own oclif settings
// instead of the package.json "oclif" block, and names its command table explicitly.
import { readFileSync } from 'node:fs';
import { arch, platform } from 'node:os';
import type { Config } from '@oclif/core';

export interface CliDefinition {
  bin: string;
  description: string;
  /** Path of the module exporting COMMANDS, relative to the package root, without extension. */
  commandsModule: string;
  /** Help text per topic (`runs`, `relay:org`); without it oclif shows a subcommand's text. */
  topics: Record<string, string>;
}

function packageRoot(): string {
  // core/cli/run-oclif.(ts|js) → two or three levels up (dist/ adds one).
  const here = new URL('.', import.meta.url);
  const up = import.meta.url.endsWith('.ts') ? '../../' : '../../../';
  return new URL(up, here).pathname;
}

/**
 * oclif settings of one CLI. Each CLI gets its own oclif root (the folder of its command table) so
 * `svc` and `svc-admin` each find their own `oclif.manifest.json` there; the build writes those
 * manifests into dist/ (scripts/oclif-manifest.ts), so compiled CLIs load only the invoked command.
 */
export async function loadCliConfig(def: CliDefinition): Promise<Config> {
  const root = packageRoot();
  const compiled = !import.meta.url.endsWith('.ts');
  const pkg = readPackage();
  const slash = def.commandsModule.lastIndexOf('/');
  const dir = def.commandsModule.slice(0, slash);
  const file = def.commandsModule.slice(slash + 1);
  // oclif's subpaths, not its index (which loads help, ux and the rest, ~50 modules, on every start).
  const { Config } = await import('@oclif/core/config');
  return Config.load({
    root: compiled ? `${root}dist/${dir}` : `${root}${dir}`,
    pjson: {
      ...pkg,
      description: def.description,
      oclif: {
        bin: def.bin,
        dirname: 'svc',
        topicSeparator: ' ',
        topics: Object.fromEntries(Object.entries(def.topics).map(([name, description]) => [name, { description }])),
        commands: { strategy: 'explicit', target: `./${file}.${compiled ? 'js' : 'ts'}`, identifier: 'COMMANDS' },
      },
    } as never,
  });
}

function readPackage(): Record<string, unknown> {
  return JSON.parse(readFileSync(`${packageRoot()}package.json`, 'utf8')) as Record<string, unknown>;
}

/**
 * `--version` answered without loading oclif (about half of a bare CLI start): the line oclif
 * itself prints, `<name>/<version> <platform>-<arch> node-<version>`.
 */
export function versionLine(pkg: Record<string, unknown> = readPackage()): string {
  const cpu = arch() === 'ia32' ? 'x86' : arch();
  return `${String(pkg['name'])}/${String(pkg['version'])} ${platform()}-${cpu} node-${process.version}`;
}

export async function runCli(def: CliDefinition, argv: string[]): Promise<number> {
  if (argv.length === 1 && argv[0] === '--version') {
    process.stdout.write(`${versionLine()}\n`);
    return 0;
  }
  const [config, { flush }, { handle }, { run }] = await Promise.all([loadCliConfig(def), import('@oclif/core/flush'), import('@oclif/core/handle'), import('@oclif/core/run')]);
  try {
    await run(argv, config);
    await flush();
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (error) {
    await handle(error as Error);
    return typeof process.exitCode === 'number' ? process.exitCode : 1;
  }
}
