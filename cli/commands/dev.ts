// `svc dev [--repo <path> | --example <dir>] [--data-dir <dir>] [--port <n>] [--relay-port <n>]
// [--push] [--json]`: relay + orchestrator + one agent on embedded defaults, wired to a git
// repository through the `svc` remote; streams run progress until Ctrl-C. See docs/dev.md.
import { enableCompileCache } from 'node:module';
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../core/cli/base-command.ts';

export default class Dev extends SvcCommand {
  static override description =
    'Start a relay, an orchestrator and one agent on embedded defaults for a repository: `git push svc HEAD` runs its workflows; Ctrl-C stops everything';
  static override examples = [
    '<%= config.bin %> dev',
    '<%= config.bin %> dev --repo ../my-app --port 0 --relay-port 0',
    '<%= config.bin %> dev --example examples/quickstart --push',
    '<%= config.bin %> dev --json',
  ];
  static override flags = {
    repo: Flags.string({ description: 'the git repository with .svc/ (default: the repository of the working directory)' }),
    example: Flags.string({ description: 'copy this example directory once to <data dir>/<name>-work as its own repository and serve that' }),
    'data-dir': Flags.string({ description: 'where the database, storage, keys and tokens live (default: SVC_DATA_DIR, else <repo>/.svc-data; with --example ./.svc-data)' }),
    port: Flags.integer({ description: 'orchestrator port (default 7700, or any free port when taken; 0: any free port)' }),
    'relay-port': Flags.integer({ description: 'relay port (default 7800, or any free port when taken; 0: any free port)' }),
    push: Flags.boolean({ description: 'push the current branch to the svc remote once ready (nothing happens when it is already there)' }),
  };

  async run(): Promise<undefined> {
    const { flags } = await this.parse(Dev);
    enableCompileCache();
    const { isSupervisedChild, parentGone, superviseDev } = await import('../dev/supervise.ts');
    if (!isSupervisedChild()) {
      // The stack runs in a child of its own process group (see cli/dev/supervise.ts).
      const code = await superviseDev();
      if (code !== 0) process.exitCode = code;
      return undefined;
    }
    const { runDev } = await import('../dev/index.ts');
    const code = await runDev({
      stopSignal: parentGone(),
      repo: flags.repo,
      example: flags.example,
      dataDir: flags['data-dir'],
      port: flags.port,
      relayPort: flags['relay-port'],
      push: flags.push,
      json: this.jsonEnabled(),
    });
    // Events were printed as they happened (one JSON object per line with --json); the exit code
    // is set, not thrown: this.exit would add oclif's multi-line JSON error to that stream.
    if (code !== 0) process.exitCode = code;
    return undefined;
  }
}
