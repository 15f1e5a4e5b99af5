// `svc init [--force] [--dir <path>] [--json]`: scaffold `.svc/` (ignore file, a workflow built
// from what the repository holds so its first run passes, a fixture, tsconfig and package.json
// for editor types, SDK types), then compile the lock.
import { enableCompileCache } from 'node:module';
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../core/cli/base-command.ts';

export interface InitOutput {
  root: string;
  /** What the repository root holds and the steps the workflow got (cli/init/detect.ts). */
  detected: { kind: string; label: string; basis: string; steps: string[]; notes: string[] };
  /** The branch the workflow's push trigger names (the current one, else main). */
  branch: string;
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
    const [{ default: path }, { scaffold }, { writeSdkTypes }, { compileWorkflows }, { gitTopLevel, tryGit }, { detectProject, describeDetection }, { ciWorkflow }] = await Promise.all([
      import('node:path'),
      import('../init/scaffold.ts'),
      import('../init/sdk-types.ts'),
      import('../compiler/compile.ts'),
      import('../preview/local-git.ts'),
      import('../init/detect.ts'),
      import('../init/templates.ts'),
    ]);
    const root = flags.dir !== undefined ? path.resolve(flags.dir) : ((await gitTopLevel(process.cwd())) ?? process.cwd());
    const [detection, current] = await Promise.all([detectProject(root), tryGit(root, ['symbolic-ref', '--quiet', '--short', 'HEAD'])]);
    const branch = current === undefined || current === '' ? 'main' : current;
    const files = await scaffold({ root, force: flags.force, svcVersion: this.config.version, workflow: ciWorkflow(detection, branch) });
    const types = await writeSdkTypes(root);
    const compiled = await compileWorkflows({ repoRoot: root });
    for (const w of compiled.warnings) process.stderr.write(`warning: ${w.message}\n`);
    if (!this.jsonEnabled()) {
      this.log(`detected    ${describeDetection(detection)}`);
      for (const note of detection.notes) this.log(`note:       ${note}`);
      for (const f of files.created) this.log(`created     ${f}`);
      for (const f of files.overwritten) this.log(`overwritten ${f}`);
      this.log(`wrote       ${types.path} (editor types for svc/sdk)`);
      this.log(`compiled    ${compiled.lockRelPath} (${compiled.workflows.map((w) => w.name).join(', ')})`);
      this.log('next: `svc run push --local` runs it on this machine; edit .svc/workflows/ci.ts, run `svc compile`, commit .svc/ (try `svc preview push` and `svc hook install`)');
    }
    return {
      root,
      detected: { kind: detection.kind, label: detection.label, basis: detection.basis, steps: detection.steps.map((st) => st.name), notes: detection.notes },
      branch,
      created: files.created,
      overwritten: files.overwritten,
      types: types.path,
      lockPath: compiled.lockRelPath,
      workflows: compiled.workflows.map((w) => w.name),
    };
  }
}
