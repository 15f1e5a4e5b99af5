// `svc compile [--check [--fail-on-drift]] [--verbose] [--json]`: write `.svc/svc.lock.json`, or
// (with --check) compare it with what would be written and fail when it is out of date.
// The work is cli/compiler/compile-command.ts (shared with the fast path, cli/fast-path.ts).
import * as Flags from '@oclif/core/flags';
import { SvcCommand } from '../../core/cli/base-command.ts';
import { type CompileOutput, runCompile } from '../compiler/compile-command.ts';

export type { CompileOutput } from '../compiler/compile-command.ts';

export default class Compile extends SvcCommand {
  static override description = 'Compile .svc/workflows into .svc/svc.lock.json (the only file the orchestrator reads to match events)';
  static override examples = [
    '<%= config.bin %> compile',
    '<%= config.bin %> compile --check',
    '<%= config.bin %> compile --check --fail-on-drift --json',
  ];
  static override flags = {
    check: Flags.boolean({ description: 'compile in memory, write nothing, exit 1 when the lock on disk is out of date' }),
    verbose: Flags.boolean({ description: 'list the files hashed for each workflow' }),
    'fail-on-drift': Flags.boolean({ description: 'with --check: also fail when the lock differs only in formatting (byte-for-byte check)' }),
  };

  async run(): Promise<CompileOutput> {
    const { flags } = await this.parse(Compile);
    return runCompile(flags, { log: (line) => this.log(line), json: this.jsonEnabled() });
  }
}
