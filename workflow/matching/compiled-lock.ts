// A lock prepared for matching: every trigger's patterns compiled, job lists split. Kept per
// lock object (the orchestrator's lock LRU hands out the same object for thousands of events);
// a re-parsed copy of the same lock recompiles only cheap lookups, because the pattern
// matchers themselves are cached by pattern text in patterns.ts. Locks are treated as
// immutable once matched.
import type { Lock, LockWorkflow } from '../../schemas/lock.ts';
import { compileTrigger, type CompiledTrigger } from './trigger.ts';

export interface CompiledWorkflow {
  readonly workflow: LockWorkflow;
  readonly triggers: readonly CompiledTrigger[];
  readonly jobs: readonly string[];
  readonly dynamicJobs: readonly string[];
  readonly usesPathFilters: boolean;
}

export interface CompiledLock {
  readonly workflows: readonly CompiledWorkflow[];
  readonly byName: ReadonlyMap<string, CompiledWorkflow>;
  readonly usesPathFilters: boolean;
}

const compiled = new WeakMap<Lock, CompiledLock>();

export function compileLock(lock: Lock): CompiledLock {
  const hit = compiled.get(lock);
  if (hit) return hit;
  const workflows = lock.workflows.map((workflow): CompiledWorkflow => {
    const triggers = workflow.triggers.map((trigger, index) => compileTrigger(trigger, index));
    return {
      workflow,
      triggers,
      jobs: workflow.jobs.filter((job) => job.dynamic !== true).map((job) => job.name),
      dynamicJobs: workflow.jobs.filter((job) => job.dynamic === true).map((job) => job.name),
      usesPathFilters: triggers.some((t) => t.paths !== null && t.paths.patterns.length > 0),
    };
  });
  const result: CompiledLock = {
    workflows,
    byName: new Map(workflows.map((w) => [w.workflow.name, w])),
    usesPathFilters: workflows.some((w) => w.usesPathFilters),
  };
  compiled.set(lock, result);
  return result;
}
