// `svc workflows [--json]`: the workflows of the committed lock (name, triggers, jobs). Reads
// only `.svc/svc.lock.json`, as the orchestrator does; `svc compile --check` says whether it is fresh.
import { SvcCommand } from '../../core/cli/base-command.ts';
import { InputError, messageOf } from '../../core/errors.ts';

export interface WorkflowsOutput {
  lockPath: string;
  workflows: { name: string; source: string; triggers: string[]; jobs: { name: string; needs: string[]; runsOn: string[]; matrixSize?: number; dynamic?: boolean }[] }[];
}

export default class Workflows extends SvcCommand {
  static override description = 'List the workflows of .svc/svc.lock.json with their triggers and jobs';

  async run(): Promise<WorkflowsOutput> {
    await this.parse(Workflows);
    const [{ readFile }, { default: path }, { findProjectRoot }, { parseLock }, { summarizeTrigger }] = await Promise.all([
      import('node:fs/promises'),
      import('node:path'),
      import('../compiler/project-root.ts'),
      import('../../workflow/lock/lock-file.ts'),
      import('../preview/trigger-summary.ts'),
    ]);
    const { root, found } = findProjectRoot();
    if (!found) throw new InputError('SVC_ERR_COMPILE_SVC_DIR_MISSING', `no .svc/ directory in ${root} or above: run \`svc init\` first`);
    const lockPath = path.join(root, '.svc', 'svc.lock.json');
    const text = await readFile(lockPath, 'utf8').catch((error: unknown) => {
      throw new InputError('SVC_ERR_LOCK_MISSING', `cannot read .svc/svc.lock.json (${messageOf(error)}): run \`svc compile\``, { cause: error });
    });
    const lock = parseLock(text);
    const output: WorkflowsOutput = {
      lockPath: '.svc/svc.lock.json',
      workflows: lock.workflows.map((w) => ({
        name: w.name,
        source: w.source,
        triggers: w.triggers.map(summarizeTrigger),
        jobs: w.jobs.map((j) => ({
          name: j.name,
          needs: j.needs,
          runsOn: j.runsOn,
          ...(j.matrix?.type === 'static' ? { matrixSize: j.matrix.size } : {}),
          ...(j.dynamic === true ? { dynamic: true } : {}),
        })),
      })),
    };
    if (!this.jsonEnabled()) {
      if (output.workflows.length === 0) this.log('no workflows in .svc/svc.lock.json');
      for (const w of output.workflows) {
        this.log(`${w.name}  (${w.source})`);
        this.log(`  on:   ${w.triggers.join(' | ')}`);
        const jobs = w.jobs.map((j) => `${j.name}${j.matrixSize !== undefined ? ` ×${j.matrixSize}` : ''}${j.dynamic ? ' (dynamic)' : ''}${j.needs.length > 0 ? ` ← ${j.needs.join(',')}` : ''}`);
        this.log(`  jobs: ${jobs.join(', ') || '(none)'}`);
      }
    }
    return output;
  }
}
