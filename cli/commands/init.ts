// `svc init [--force] [--dir <path>] [--json]`: scaffold `.svc/` (ignore file, example workflow
// and fixture, tsconfig and package.json for editor types, SDK types), then compile the lock.
import { enableCompileCache } from 'node:module';
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../core/cli/base-command.ts';

export interface InitOutput {
  root: string;
  created: string[];
  overwritten: string[];
  types: string;
  lockPath: string;
  workflows: string[];
}

export default class Init extends SvcCommand {
  static override description = 'Scaffold .svc/ (workflows, tests, .svcignore, tsconfig, package.json) and compile the first lock';
  static override examples = ['<%= config.bin %> init', '<%= config.bin %> init --force'];
  static override flags = {
    force: Flags.boolean({ description: 'overwrite files that already exist' }),
    dir: Flags.string({ description: 'directory to create .svc/ in (default: the top of the git work tree, else the current directory)' }),
  };

  async run(): Promise<InitOutput> {
    const { flags } = await this.parse(Init);
    enableCompileCache();
    const [{ default: path }, { scaffold }, { writeSdkTypes }, { compileWorkflows }, { gitTopLevel }] = await Promise.all([
      import('node:path'),
      import('../init/scaffold.ts'),
      import('../init/sdk-types.ts'),
      import('../compiler/compile.ts'),
      import('../preview/local-git.ts'),
    ]);
    const root = flags.dir !== undefined ? path.resolve(flags.dir) : ((await gitTopLevel(process.cwd())) ?? process.cwd());
    const files = await scaffold({ root, force: flags.force, svcVersion: this.config.version });
    const types = await writeSdkTypes(root);
    const compiled = await compileWorkflows({ repoRoot: root });
    for (const w of compiled.warnings) process.stderr.write(`warning: ${w.message}\n`);
    if (!this.jsonEnabled()) {
      for (const f of files.created) this.log(`created     ${f}`);
      for (const f of files.overwritten) this.log(`overwritten ${f}`);
      this.log(`wrote       ${types.path} (editor types for svc/sdk)`);
      this.log(`compiled    ${compiled.lockRelPath} (${compiled.workflows.map((w) => w.name).join(', ')})`);
      this.log('next: edit .svc/workflows/ci.ts, run `svc compile`, commit .svc/ (try `svc preview push` and `svc hook install`)');
    }
    return {
      root,
      created: files.created,
      overwritten: files.overwritten,
      types: types.path,
      lockPath: compiled.lockRelPath,
      workflows: compiled.workflows.map((w) => w.name),
    };
  }
}
