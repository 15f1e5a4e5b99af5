// `svc preview`: compile in memory, build the event from the local checkout, and match it with
// the orchestrator's own matcher. Every workflow ends up either matched (with its jobs) or
// unmatched with the reason; `indeterminate` means a filter could not be decided locally.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { InputError } from '../../core/errors.ts';
import type { Lock } from '../../schemas/lock.ts';
import {
  evaluateRequirements,
  explainWorkflow,
  matchLock,
  matchSchedule,
  type FilterVerdict,
  type WorkflowMatch,
  type WorkflowNonMatch,
} from '../../workflow/matching/index.ts';
import { findProjectRoot } from '../compiler/project-root.ts';
import { readFreshLock } from './fresh-lock.ts';
import { buildPreviewEvent, parseEventSpec } from './local-event.ts';
import { readLocalGitState } from './local-git-state.ts';
import { summarizeTrigger } from './trigger-summary.ts';

export interface PreviewOptions {
  cwd: string;
  /** `push`, `pr:opened`, `tag:v1.2.0`, … (see PREVIEW_EVENT_FORMS). */
  event: string;
  branch?: string;
}

export interface PreviewMatched {
  workflow: string;
  /** Summary of the trigger that matched. */
  trigger: string;
  triggerIndex: number;
  jobs: string[];
  dynamicJobs: string[];
  /** Every filter verdict of every trigger (for --debug). */
  verdicts: FilterVerdict[];
}

export interface PreviewUnmatched {
  workflow: string;
  verdict: 'no_match' | 'indeterminate';
  /** One line: each trigger's failing or undecided filters. */
  reason: string;
  /** Non-passing verdicts. */
  reasons: FilterVerdict[];
  /** Every filter verdict of every trigger (for --debug). */
  verdicts: FilterVerdict[];
}

export interface PreviewResult {
  label: string;
  event: {
    name: string;
    type: string | null;
    repository: string | null;
    branch: string | null;
    tag: string | null;
    sha: string | null;
    baseBranch: string | null;
    commitMessage: string | null;
  };
  changedFiles: { base: string; files: string[] | null };
  matched: PreviewMatched[];
  unmatched: PreviewUnmatched[];
  /** Compile warnings and notes. */
  warnings: string[];
}

/**
 * One line of reasons. Triggers of another type only add noise next to a trigger of the event's
 * type that failed a filter, so they are summarized when nothing else explains the miss.
 */
export function describeReasons(reasons: readonly FilterVerdict[], eventType: string | null): string {
  if (reasons.length === 0) return 'the workflow has no trigger';
  const typeMisses = reasons.filter((r) => r.filter === 'type');
  const others = reasons.filter((r) => r.filter !== 'type');
  if (others.length === 0) {
    const kinds = [...new Set(typeMisses.map((r) => r.triggerType))].join(', ');
    return `no ${eventType ?? 'matching'} trigger (triggers: ${kinds})`;
  }
  return others.map((r) => `${r.triggerType}#${r.trigger} ${r.filter} ${r.verdict}: ${r.detail}`).join('; ');
}

function unmatchedOf(entry: WorkflowNonMatch, verdicts: FilterVerdict[], eventType: string | null): PreviewUnmatched {
  const reasons = entry.reasons.filter((r) => r.verdict !== 'pass');
  return { workflow: entry.workflow, verdict: entry.verdict, reason: describeReasons(reasons, eventType), reasons, verdicts };
}

/**
 * The committed lock when `.svc/` is unchanged since it was compiled (what the orchestrator will
 * match against), otherwise a compile in memory. The compiler, which imports every workflow
 * module, is loaded only in the second case.
 */
async function lockToPreview(root: string): Promise<{ lock: Lock; warnings: string[] }> {
  const fresh = await readFreshLock(root);
  if (fresh !== undefined) return fresh;
  const { compileWorkflows } = await import('../compiler/compile.ts');
  const compiled = await compileWorkflows({ repoRoot: root, mode: 'memory' });
  return { lock: compiled.lock, warnings: [...compiled.warnings.map((w) => w.message), ...compiled.notes] };
}

export async function previewEvent(options: PreviewOptions): Promise<PreviewResult> {
  const spec = parseEventSpec(options.event);
  const { root, found } = findProjectRoot(options.cwd);
  if (!found) throw new InputError('SVC_ERR_COMPILE_SVC_DIR_MISSING', `no .svc/ directory in ${root} or above: run \`svc init\` first`);
  const state = await readLocalGitState(root);
  if (state === undefined) {
    throw new InputError('SVC_ERR_PREVIEW_NOT_A_REPOSITORY', `${root} is not in a git work tree: preview builds its event from git (branch, commit, changed files); run \`git init\` and commit`);
  }
  const compiled = await lockToPreview(root);
  const built = buildPreviewEvent(spec, state, options.branch === undefined ? {} : { branch: options.branch });
  const lock = compiled.lock;
  const result = matchLock(built.event, lock, built.options);
  const explain = (workflow: string): FilterVerdict[] => explainWorkflow(built.event, lock, workflow, built.options) ?? [];

  const matches: WorkflowMatch[] = [...result.matched];
  let nonMatches: WorkflowNonMatch[] = [...result.unmatched];
  if (built.schedule) {
    // A schedule fire names one trigger; a preview asks "what runs on a schedule": all of them.
    nonMatches = nonMatches.filter((n) => {
      const index = lock.workflows.find((w) => w.name === n.workflow)?.triggers.findIndex((t) => t.type === 'schedule') ?? -1;
      const fire = index < 0 ? null : matchSchedule(lock, n.workflow, index);
      if (fire !== null) matches.push(fire);
      return fire === null;
    });
  }

  const matched: PreviewMatched[] = [];
  const unmatched: PreviewUnmatched[] = nonMatches.map((n) => unmatchedOf(n, explain(n.workflow), built.event.type));
  const readLocal = async (file: string): Promise<string | null> => {
    const abs = path.resolve(state.top, file);
    if (path.relative(state.top, abs).startsWith('..')) return null;
    return readFile(abs, 'utf8').catch(() => null);
  };
  for (const m of matches) {
    const verdicts = built.schedule ? m.verdicts : explain(m.workflow);
    if (m.requires.length > 0) {
      const req = await evaluateRequirements(m.requires, readLocal);
      if (!req.ok) {
        const reason: FilterVerdict = { trigger: m.triggerIndex, triggerType: m.trigger.type, filter: 'target', verdict: 'fail', detail: `requires: ${req.reason}` };
        unmatched.push({ workflow: m.workflow, verdict: 'no_match', reason: `${m.trigger.type}#${m.triggerIndex} requires: ${req.reason}`, reasons: [reason], verdicts });
        continue;
      }
    }
    matched.push({ workflow: m.workflow, trigger: summarizeTrigger(m.trigger), triggerIndex: m.triggerIndex, jobs: m.jobs, dynamicJobs: m.dynamicJobs, verdicts });
  }
  const order = new Map(lock.workflows.map((w, i) => [w.name, i]));
  const byLockOrder = (a: { workflow: string }, b: { workflow: string }): number => (order.get(a.workflow) ?? 0) - (order.get(b.workflow) ?? 0);
  matched.sort(byLockOrder);
  unmatched.sort(byLockOrder);

  const e = built.event;
  return {
    label: built.label,
    event: {
      name: e.eventName,
      type: e.type,
      repository: e.repository?.fullName ?? null,
      branch: e.branch,
      tag: e.tag,
      sha: e.sha,
      baseBranch: e.pullRequest?.baseRef ?? null,
      commitMessage: built.options.commitMessage !== undefined ? built.options.commitMessage : e.commitMessage,
    },
    changedFiles: { base: state.changedFilesBase, files: state.changedFiles },
    matched,
    unmatched,
    warnings: compiled.warnings,
  };
}
