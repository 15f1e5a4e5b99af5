// Resuming a job after its agent restarted (docs/agent.md "When an agent restarts mid-job"). The
// new runner gets the previous runner's step checkpoints in `runner.start.resume`: those steps
// are not run again; their outputs come back and their setEnv/addPath calls are replayed in
// order. The agent has already moved recorded paths under the old workspace to the new one
// (agent/jobs/in-flight.ts carryProgress).
import { delimiter } from 'node:path';
import type { EnvEffect } from '../../schemas/wire/runner.ts';

/** Applies recorded setEnv/addPath calls to the job environment (and this process's, as ctx does). */
export function replayEffects(env: Record<string, string | undefined>, effects: readonly EnvEffect[]): void {
  for (const effect of effects) {
    if ('setEnv' in effect) {
      env[effect.setEnv] = effect.value;
      process.env[effect.setEnv] = effect.value;
    } else {
      const dir = effect.addPath;
      env['PATH'] = env['PATH'] ? `${dir}${delimiter}${env['PATH']}` : dir;
      process.env['PATH'] = env['PATH'];
    }
  }
}

/**
 * Why the step that was running when the agent went away is not run again, or undefined when
 * it is: a step with a `check` is (its check decides on the target as it now is); any other
 * step may have done part of its work, which running its body again could do twice.
 */
export function notRunAgainReason(hasCheck: boolean): string | undefined {
  if (hasCheck) return undefined;
  return (
    'the agent restarted while this step was running; it is not run again, because it may have done part of its work ' +
    'and it has no check to tell (give the step a check to have it run again after a restart)'
  );
}
