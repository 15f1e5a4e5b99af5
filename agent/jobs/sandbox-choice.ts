// Which sandbox a dispatched job runs in, and what its `container` entry asks of it. Checked
// before the clone, so a job this agent cannot run fails before it has cost anything.
import type { SandboxAvailability, SandboxExtensionPoint } from '../../core/extension-points/sandbox.ts';
import { describeContainerOptionProblem, parseContainerOptions } from '../../core/container-options.ts';
import type { JobDispatch } from '../../schemas/wire/agent.ts';
import { JobFailure } from './failure.ts';

export interface SandboxChoice {
  name: string;
  sandbox: SandboxExtensionPoint;
  availability: SandboxAvailability;
}

/** The container sandbox for a container job, else the agent's default; refused when missing or unusable. */
export function chooseSandbox(dispatch: JobDispatch, sandboxes: ReadonlyMap<string, SandboxChoice>, defaultSandbox: string): SandboxChoice {
  const wantsContainer = dispatch.jobConfig.container !== undefined && dispatch.jobConfig.container !== null;
  const name = wantsContainer ? 'container' : defaultSandbox;
  const choice = sandboxes.get(name);
  if (choice === undefined) {
    throw new JobFailure('SVC_ERR_AGENT_SANDBOX_MISSING', wantsContainer ? 'this is a container job but the agent has no container sandbox (no container runtime: podman or docker)' : `the agent has no ${name} sandbox`);
  }
  if (!choice.availability.available) {
    throw new JobFailure('SVC_ERR_AGENT_SANDBOX_UNAVAILABLE', `${wantsContainer ? 'container job' : 'job'} cannot start: ${choice.availability.missing} is missing: ${choice.availability.message}`);
  }
  if (wantsContainer) containerOptions(dispatch);
  return choice;
}

/**
 * `container.options`, checked again on the agent (a lock compiled by an older svc may carry one
 * this agent refuses), and their `--env` variables, which the job's code and commands see too.
 */
export function containerOptions(dispatch: JobDispatch): { list: string[]; env: Record<string, string> } {
  const container = dispatch.jobConfig.container as { options?: unknown } | string | null | undefined;
  const list = typeof container === 'object' && container !== null && Array.isArray(container.options) ? (container.options as string[]) : [];
  const parsed = parseContainerOptions(list);
  if (!parsed.ok) throw new JobFailure('SVC_ERR_AGENT_CONTAINER_OPTION', `${describeContainerOptionProblem(parsed.problem)}; nothing was run (svc compile names it too: compile the workflow with this version)`);
  return { list, env: Object.fromEntries(parsed.options.env) };
}

/** The job's container image: the lock's `container` is a string or `{ image, options }`. */
export function containerImage(dispatch: JobDispatch): string | undefined {
  const container = dispatch.jobConfig.container as unknown;
  if (typeof container === 'string') return container;
  if (typeof container === 'object' && container !== null && typeof (container as { image?: unknown }).image === 'string') return (container as { image: string }).image;
  return undefined;
}
