// What the lock can express but this version's runtime does not carry out yet. A CI that accepts a
// schedule and never runs it, or holds a run for an approval nothing can give, fails silently —
// the one failure a CI must never have. So every such feature is listed here, once, and refused
// where it would otherwise be dropped: `svc compile` refuses to write a lock that uses one, and the
// orchestrator drops a matched run whose (older) lock uses one, recording the reason on the
// delivery. A feature leaves this table in the change that makes the runtime honour it.
import type { LockTrigger, LockWorkflow } from '../schemas/lock.ts';
import { parseContainerOptions } from '../core/container-options.ts';
import { ORG_ROLES } from '../schemas/org-roles.ts';

export interface UnhonouredFeature {
  /** Field path inside the workflow definition (`on[1]`, `jobs.deploy.approval`). */
  path: string;
  /** What the workflow asked for, as the author wrote it (`schedule()`, `approval`). */
  feature: string;
  /** Why nothing would happen, and what to do instead. */
  reason: string;
}

/** Lifecycle events the orchestrator emits; the others exist in the SDK's vocabulary only. */
const EMITTED_LIFECYCLE_EVENTS: ReadonlySet<string> = new Set(['registration.updated']);

/** Why a trigger would never start its workflow on this runtime, or null when it would. */
function unhonouredTrigger(trigger: LockTrigger): { builder: string; reason: string } | null {
  if (trigger.type === 'schedule' && trigger.branch !== undefined) {
    return {
      builder: `schedule(..., { branch: '${trigger.branch}' })`,
      reason: "schedules run the workflow registered from the default branch; a schedule on another branch is not carried out (drop `branch`)",
    };
  }
  if (trigger.type === 'lifecycle') {
    const never = trigger.events.filter((e) => !EMITTED_LIFECYCLE_EVENTS.has(e));
    if (never.length > 0) {
      return {
        builder: `lifecycle({ events: [${never.map((e) => `'${e}'`).join(', ')}] })`,
        reason: `this version emits only ${[...EMITTED_LIFECYCLE_EVENTS].join(', ')}; ${never.join(', ')} would never start the workflow`,
      };
    }
  }
  return null;
}

/**
 * Approval clauses naming a role that is not an org role (viewer, developer, approver, admin):
 * nobody holds it, so the clause could never be met. Teams are provider groups, resolved from the
 * relay's people store (docs/run-control.md, "Teams and roles"), so any team name may be met.
 */
function unresolvablePrincipals(path: string, approval: { clauses: ReadonlyArray<{ roles: readonly string[] }> } | undefined): UnhonouredFeature[] {
  if (approval === undefined) return [];
  return approval.clauses.flatMap((c, i) => {
    const unknown = c.roles.filter((r) => !(ORG_ROLES as readonly string[]).includes(r));
    return unknown.length === 0
      ? []
      : [{ path: `${path}.clauses[${i}]`, feature: `approval by ${unknown.map((x) => `role ${x}`).join(', ')}`, reason: `no person holds such a role, so the clause could never be met; the roles are ${ORG_ROLES.join(', ')}` }];
  });
}

/**
 * The first `container.options` item the agent would refuse (core/container-options.ts): the
 * compiler fails on malformed ones itself, so at compile this names the unsafe or unsupported
 * ones (`--privileged`); for an older lock it names whichever the agent would refuse.
 */
function unhonouredContainerOption(job: LockWorkflow['jobs'][number]): UnhonouredFeature[] {
  if (job.container === undefined) return [];
  const parsed = parseContainerOptions(job.container.options);
  if (parsed.ok) return [];
  const { index, option, reason } = parsed.problem;
  return [{ path: `jobs.${job.name}.container.options[${index}]`, feature: `container option ${option}`, reason }];
}

/** Every feature of `workflow` the runtime would not carry out, in definition order. */
export function unhonouredFeatures(workflow: Pick<LockWorkflow, 'triggers' | 'jobs' | 'approval' | 'concurrency'>): UnhonouredFeature[] {
  const found: UnhonouredFeature[] = [];
  workflow.triggers.forEach((trigger, index) => {
    const known = unhonouredTrigger(trigger);
    if (known !== null) found.push({ path: `on[${index}]`, feature: known.builder, reason: known.reason });
  });
  found.push(...unresolvablePrincipals('approval', workflow.approval));
  for (const job of workflow.jobs) {
    found.push(...unhonouredContainerOption(job));
    // Retries (agent loss, failed tests, exit codes) are carried out (docs/run-states.md
    // "Retries"); a job retried on exit codes goes only to agents that report them (protocol-gap.ts).
    found.push(...unresolvablePrincipals(`jobs.${job.name}.approval`, job.approval));
    // Step holds are carried out (the runner pauses before the step); only their clauses are checked.
    for (const step of job.steps) found.push(...unresolvablePrincipals(`jobs.${job.name}.steps.${step.name}.approval`, step.approval));
  }
  return found;
}

/**
 * The features that change how a run of `workflow` goes (not which events start it): a matched
 * workflow with any of these is not run, since running it would ignore them. `lockfileHash`: the
 * lock's (null without a lockfile), for `registries`/`installEnv`; undefined skips that check.
 */
export function unhonouredRunFeatures(workflow: Pick<LockWorkflow, 'triggers' | 'jobs' | 'approval' | 'concurrency' | 'registries' | 'installEnv'>, lockfileHash?: string | null): UnhonouredFeature[] {
  const install = lockfileHash === undefined ? [] : unhonouredInstall(workflow, lockfileHash?.split(':')[0]);
  return [...unhonouredFeatures(workflow).filter((f) => !f.path.startsWith('on[')), ...install];
}

/** One line per feature, for an error message or a recorded reason. */
export function describeUnhonoured(features: readonly UnhonouredFeature[]): string {
  return features.map((f) => `${f.path}: ${f.feature} — ${f.reason}`).join('; ');
}

/**
 * `registries` and `installEnv` are honoured on one install only: the agent's `npm ci` of
 * `.svc/package-lock.json` (docs/agent.md "Private registries and installEnv"). With another
 * package manager's lockfile (`pnpm`, `yarn`), or none, no install would ever read them.
 * `packageManager`: the manager of the lock's `lockfileHash`, undefined without a lockfile.
 */
export function unhonouredInstall(workflow: Pick<LockWorkflow, 'registries' | 'installEnv'>, packageManager: string | undefined): UnhonouredFeature[] {
  if (packageManager === 'npm') return [];
  const reason =
    packageManager === undefined
      ? 'there is no .svc/package-lock.json, so no dependency install runs to use it (add the dependencies with npm in .svc/)'
      : `the dependencies are locked with ${packageManager}; this version installs .svc/ with npm only (.svc/package-lock.json), so nothing would read it`;
  return [
    ...(workflow.registries === undefined ? [] : [{ path: 'registries', feature: 'registries', reason }]),
    ...(workflow.installEnv === undefined ? [] : [{ path: 'installEnv', feature: 'installEnv', reason }]),
  ];
}
