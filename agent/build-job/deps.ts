// The dependency tarball: `npm ci --ignore-scripts` in a scratch copy of `.svc/`, then
// `node_modules/` as a deterministic tarball whose entries are `node_modules/…`. The agent's
// restore (agent/jobs/restore.ts) extracts a dependency tarball INTO `.svc/`, so this layout
// puts the packages at `.svc/node_modules/` where the workflow's imports look for them.
// Lifecycle scripts never run: the install happens on the agent host, outside any sandbox.
import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { messageOf } from '../../core/errors.ts';
import { JobFailure } from '../jobs/failure.ts';
import { withPrivateInstall, type JobInstall } from '../jobs/private-install.ts';
import { listTree, writeTarball, type TarballResult } from './tarball.ts';

export const NPM_CI_ARGS = ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'] as const;
const INSTALL_TIMEOUT_MS = 15 * 60_000;

export interface DepsInstallOptions {
  /** A scratch copy of `.svc/` holding package.json and package-lock.json (npm ci writes node_modules here). */
  svcCopy: string;
  /** Where the tarball is written. */
  out: string;
  /** Environment of npm (PATH with this Node first, HOME, npm_config_cache); nothing else leaks in. */
  env: Record<string, string>;
  /** The workflow's registries and installEnv with their values (a local run's): npm alone gets them. */
  install?: JobInstall | undefined;
  signal: AbortSignal;
  log(text: string): void;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** npm ci, then the node_modules tarball. Throws JobFailure (npm's own output tail) on failure. */
export async function installDependencies(options: DepsInstallOptions): Promise<TarballResult> {
  if (!(await exists(join(options.svcCopy, 'package-lock.json')))) {
    throw new JobFailure('SVC_ERR_BUILD_NO_PACKAGE_LOCK', 'there is no .svc/package-lock.json to install from');
  }
  const cache = options.env['npm_config_cache'];
  if (cache !== undefined) await mkdir(cache, { recursive: true });
  options.log(`npm ${NPM_CI_ARGS.join(' ')} (in a copy of .svc/)`);
  const result = await withPrivateInstall(options.env, options.install, options.log, (env) =>
    execa('npm', [...NPM_CI_ARGS], {
      cwd: options.svcCopy,
      env,
      extendEnv: false,
      reject: false,
      all: true,
      cancelSignal: options.signal,
      timeout: INSTALL_TIMEOUT_MS,
    }),
  );
  if (options.signal.aborted) throw options.signal.reason instanceof Error ? options.signal.reason : new JobFailure('SVC_ERR_AGENT_JOB_CANCELLED', 'cancelled', { status: 'cancelled' });
  if (result.exitCode !== 0) {
    const tail = String(result.all ?? '').trim().split('\n').slice(-20).join('\n');
    const how = result.timedOut ? `timed out after ${INSTALL_TIMEOUT_MS / 60_000} minutes` : `failed with exit code ${String(result.exitCode)}`;
    throw new JobFailure('SVC_ERR_BUILD_NPM_CI', `npm ci ${how}: ${tail || '(no output)'}`);
  }
  const modules = join(options.svcCopy, 'node_modules');
  if (!(await exists(modules))) await mkdir(modules);
  try {
    const entries = await listTree(options.svcCopy, ['node_modules']);
    return await writeTarball(options.svcCopy, entries, options.out);
  } catch (error) {
    throw new JobFailure('SVC_ERR_BUILD_DEPS_TAR', `cannot pack node_modules: ${messageOf(error)}`, { cause: error });
  }
}
