// A job's environment, in one place (docs/agent.md "What a job's environment holds"): the step
// runner's spawn environment and what `runner.start` hands the job's code and commands. Nothing
// else of the agent's environment reaches a job: only the variables its pass-through policy
// (SVC_AGENT_PASS_ENV, agent/env.ts) names, when they are set.
import type { SpawnRequest, Workspace } from '../../core/extension-points/sandbox.ts';
import { passedReadPaths } from '../env.ts';
import { pathWithNode } from './restore.ts';

/** What a job's code and commands see (runner.start env): the passed variables, its scratch HOME/TMPDIR, LANG, the workflow's env. */
export function jobStartEnv(passedEnv: Readonly<Record<string, string>> | undefined, scratch: string, workflowEnv: Readonly<Record<string, string>>): Record<string, string> {
  return { ...passedEnv, HOME: scratch, TMPDIR: scratch, LANG: 'C.UTF-8', ...workflowEnv };
}

/** The spawn request for a step runner: argv, the minimal environment, the paths it reads. */
/** What of the agent's job environment (executor.ts JobEnvironment) a runner's spawn needs. */
export interface RunnerSpawnSettings {
  /** Absolute path of the step runner entry. */
  runnerPath: string;
  /** Host paths the runner reads, for sandboxes that mount them. */
  readPaths: readonly string[];
  compileCacheDir?: string;
  passedEnv?: Readonly<Record<string, string>>;
}

export function runnerSpawnRequest(env: RunnerSpawnSettings, workspace: Workspace, image?: string): SpawnRequest {
  const tmp = workspace.tmpDir ?? workspace.dir;
  // The passed variables are in the runner's own environment too: Node reads NODE_EXTRA_CA_CERTS
  // and NODE_USE_ENV_PROXY once, at start, for the workflow code's own fetch/https.
  const passed = env.passedEnv ?? {};
  return {
    workspace,
    argv: [process.execPath, env.runnerPath],
    env: { ...passed, PATH: pathWithNode(), HOME: tmp, TMPDIR: tmp, LANG: 'C.UTF-8', ...(env.compileCacheDir === undefined ? {} : { NODE_COMPILE_CACHE: env.compileCacheDir }) },
    cwd: workspace.dir,
    ipc: true,
    ...(image === undefined ? {} : { image }),
    // The cache and passed CA bundles are re-bound read-only by sandboxes that hide them (bwrap's fresh /tmp).
    readPaths: [...env.readPaths, ...(env.compileCacheDir === undefined ? [] : [env.compileCacheDir]), ...passedReadPaths(passed)],
  };
}
