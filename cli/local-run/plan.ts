// What `svc run <event> --local` runs: the workflows compiled in memory from the working tree,
// the synthetic event `svc preview` builds from local git state, and the orchestrator's matcher.
// Outside a git repository the event has no commit and no branch unless `--branch` names one.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { InputError } from '../../core/errors.ts';
import { evaluateRequirements, explainWorkflow, matchLock, matchSchedule, type FilterVerdict, type WorkflowMatch } from '../../workflow/matching/index.ts';
import type { NormalizedEvent } from '../../schemas/event.ts';
import type { LockWorkflow } from '../../schemas/lock.ts';
import { compileWorkflows } from '../compiler/compile.ts';
import { findProjectRoot } from '../compiler/project-root.ts';
import { buildPreviewEvent, parseEventSpec } from '../preview/local-event.ts';
import { readLocalGitState, type LocalGitState } from '../preview/local-git-state.ts';
import { describeReasons } from '../preview/preview.ts';
import { summarizeTrigger } from '../preview/trigger-summary.ts';

export interface PlannedWorkflow {
  entry: LockWorkflow;
  trigger: string;
  verdicts: FilterVerdict[];
}

export interface LocalRunPlan {
  root: string;
  /** Whether `root` is in a git work tree (else `state` is made up: no branch, commit or changed files). */
  inGit: boolean;
  state: LocalGitState;
  label: string;
  event: NormalizedEvent;
  changedFiles: string[] | null;
  /** The lock compiled in memory (serialized): bundled as `.svc/svc.lock.json`. */
  lockText: string;
  matched: PlannedWorkflow[];
  unmatched: Array<{ workflow: string; reason: string; verdicts: FilterVerdict[] }>;
  warnings: string[];
}

/** What a directory outside git tells the event builder: nothing but its name. */
function noGitState(root: string): LocalGitState {
  return {
    top: root,
    branch: null,
    sha: null,
    parentSha: null,
    commitMessage: null,
    defaultBranch: null,
    changedFilesBase: 'not a git repository',
    changedFiles: null,
    repository: `local/${path.basename(root)}`,
    user: '',
    latestTag: null,
  };
}

export async function planLocalRun(options: { cwd: string; event: string; branch?: string }): Promise<LocalRunPlan> {
  const spec = parseEventSpec(options.event);
  const { root, found } = findProjectRoot(options.cwd);
  if (!found) throw new InputError('SVC_ERR_COMPILE_SVC_DIR_MISSING', `no .svc/ directory in ${root} or above: run \`svc init\` first`);
  const gitState = await readLocalGitState(root);
  const state = gitState ?? noGitState(root);
  const compiled = await compileWorkflows({ repoRoot: root, mode: 'memory' });
  const built = buildPreviewEvent(spec, state, options.branch === undefined ? {} : { branch: options.branch });
  const lock = compiled.lock;
  const result = matchLock(built.event, lock, built.options);
  const explain = (workflow: string): FilterVerdict[] => explainWorkflow(built.event, lock, workflow, built.options) ?? [];
  const matches: WorkflowMatch[] = [...result.matched];
  const unmatched: LocalRunPlan['unmatched'] = [];
  for (const n of result.unmatched) {
    const index = built.schedule ? (lock.workflows.find((w) => w.name === n.workflow)?.triggers.findIndex((t) => t.type === 'schedule') ?? -1) : -1;
    const fire = index < 0 ? null : matchSchedule(lock, n.workflow, index);
    if (fire !== null) matches.push(fire);
    else unmatched.push({ workflow: n.workflow, reason: describeReasons(n.reasons.filter((r) => r.verdict !== 'pass'), built.event.type), verdicts: explain(n.workflow) });
  }
  const readLocal = async (file: string): Promise<string | null> => {
    const abs = path.resolve(state.top, file);
    if (path.relative(state.top, abs).startsWith('..')) return null;
    return readFile(abs, 'utf8').catch(() => null);
  };
  const matched: PlannedWorkflow[] = [];
  for (const m of matches) {
    const verdicts = built.schedule ? m.verdicts : explain(m.workflow);
    if (m.requires.length > 0) {
      const req = await evaluateRequirements(m.requires, readLocal);
      if (!req.ok) {
        unmatched.push({ workflow: m.workflow, reason: `${m.trigger.type}#${m.triggerIndex} requires: ${req.reason}`, verdicts });
        continue;
      }
    }
    const entry = lock.workflows.find((w) => w.name === m.workflow);
    if (entry !== undefined) matched.push({ entry, trigger: summarizeTrigger(m.trigger), verdicts });
  }
  const order = new Map(lock.workflows.map((w, i) => [w.name, i]));
  matched.sort((a, b) => (order.get(a.entry.name) ?? 0) - (order.get(b.entry.name) ?? 0));
  return {
    root,
    inGit: gitState !== undefined,
    state,
    label: built.label,
    event: built.event,
    changedFiles: state.changedFiles,
    lockText: compiled.text,
    matched,
    unmatched,
    warnings: [...compiled.warnings.map((w) => w.message), ...compiled.notes],
  };
}
