// Restore a job's tree from the caches (spec "Lock file and drift errors"):
// - source tarball: a download failure or a digest mismatch is a HARD failure; the agent never
//   falls back to a checkout, so a run never executes a tree other than the one cached;
// - dependency tarball: a download failure falls back to an inline install; a digest mismatch
//   is retried (three attempts in all), then the job fails.
import { access, mkdir, rm } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { execa } from 'execa';
import { messageOf } from '../../core/errors.ts';
import { DownloadError, describeUrl, downloadToFile, normalizeDigest } from './download.ts';
import { extractArchive } from './extract.ts';
import { JobFailure } from './failure.ts';
import { withPrivateInstall, type JobInstall } from './private-install.ts';

export const DEPS_ATTEMPTS = 3;

export interface SetupLog {
  (text: string): void;
}

export async function restoreSource(options: { url: string; digest: string | null; jobRoot: string; srcDir: string; log: SetupLog; signal: AbortSignal }): Promise<void> {
  const expected = options.digest === null ? null : normalizeDigest(options.digest);
  if (expected === null) {
    throw new JobFailure('SVC_ERR_AGENT_SOURCE_DIGEST', `the dispatch names a source tarball but no valid sha256 digest for it (got ${JSON.stringify(options.digest)}); refusing to run an unverified tree`);
  }
  const file = join(options.jobRoot, 'source.tar.gz');
  options.log(`restoring source from ${describeUrl(options.url)}`);
  let got: string;
  try {
    got = (await downloadToFile(options.url, file, { signal: options.signal })).sha256;
  } catch (error) {
    throw new JobFailure('SVC_ERR_AGENT_SOURCE_DOWNLOAD', `source tarball download failed (hard failure, no rebuild from checkout): ${messageOf(error)}`, { cause: error });
  }
  if (got !== expected) {
    throw new JobFailure('SVC_ERR_AGENT_SOURCE_DIGEST', `source tarball digest mismatch: expected sha256 ${expected}, got ${got} (hard failure, no rebuild from checkout)`);
  }
  try {
    await extractArchive(file, options.srcDir);
  } catch (error) {
    throw new JobFailure('SVC_ERR_AGENT_SOURCE_EXTRACT', `source tarball could not be extracted: ${messageOf(error)}`, { cause: error });
  } finally {
    await rm(file, { force: true });
  }
}

export type DepsOutcome = 'restored' | 'installed' | 'none';

export async function restoreDeps(options: {
  url: string | null;
  hash: string | null;
  jobRoot: string;
  srcDir: string;
  log: SetupLog;
  signal: AbortSignal;
  /** Environment for the inline install (PATH with Node 24 first, HOME, caches). */
  installEnv: Record<string, string>;
  /** The workflow's registries and installEnv (private-install.ts), for the inline install only. */
  install?: JobInstall | undefined;
}): Promise<DepsOutcome> {
  const svcDir = join(options.srcDir, '.svc');
  if (options.url !== null) {
    const expected = options.hash === null ? null : normalizeDigest(options.hash);
    if (expected === null) {
      options.log(`dependency tarball has no valid sha256 digest (${JSON.stringify(options.hash)}); installing inline instead`);
    } else {
      const fetched = await fetchDeps({ url: options.url, expected, file: join(options.jobRoot, 'deps.tar.gz'), into: svcDir, log: options.log, signal: options.signal });
      if (fetched === 'restored') {
        options.log(`dependencies restored from cache (sha256 ${expected})`);
        return 'restored';
      }
    }
  }
  return inlineInstall(svcDir, options.log, options.installEnv, options.signal, options.install);
}

/**
 * Download the dependency tarball, check its digest (three attempts on a mismatch, then a hard
 * failure) and extract it into `into`. `'unavailable'`: the download failed (the caller installs
 * inline instead).
 */
export async function fetchDeps(options: { url: string; expected: string; file: string; into: string; log: SetupLog; signal: AbortSignal }): Promise<'restored' | 'unavailable'> {
  const { file, expected } = options;
  for (let attempt = 1; attempt <= DEPS_ATTEMPTS; attempt++) {
    let got: string;
    try {
      got = (await downloadToFile(options.url, file, { signal: options.signal })).sha256;
    } catch (error) {
      if (!(error instanceof DownloadError)) throw error;
      options.log(`dependency tarball download failed (${messageOf(error)}); falling back to an inline install`);
      await rm(file, { force: true });
      return 'unavailable';
    }
    if (got === expected) {
      try {
        await extractArchive(file, options.into);
      } catch (error) {
        throw new JobFailure('SVC_ERR_AGENT_DEPS_EXTRACT', `dependency tarball could not be extracted: ${messageOf(error)}`, { cause: error });
      } finally {
        await rm(file, { force: true });
      }
      return 'restored';
    }
    options.log(`dependency tarball hash mismatch on attempt ${attempt} of ${DEPS_ATTEMPTS}: expected sha256 ${expected}, got ${got}`);
    await rm(file, { force: true });
  }
  throw new JobFailure('SVC_ERR_AGENT_DEPS_DIGEST', `dependency tarball hash mismatch after ${DEPS_ATTEMPTS} attempts (expected sha256 ${expected}); the cached dependencies are corrupt or being replaced`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * `npm ci` in `.svc/` when `.svc/package-lock.json` exists. Lifecycle scripts are not run
 * (`--ignore-scripts`): the install happens on the agent host, outside the sandbox, and must not
 * execute repository code there.
 */
export async function inlineInstall(svcDir: string, log: SetupLog, env: Record<string, string>, signal: AbortSignal, install?: JobInstall): Promise<DepsOutcome> {
  if (!(await exists(join(svcDir, 'package-lock.json')))) {
    if ((await exists(join(dirname(svcDir), 'pnpm-lock.yaml'))) || (await exists(join(dirname(svcDir), 'yarn.lock')))) {
      log('a pnpm or yarn workspace lockfile was found; this agent installs inline only with npm (.svc/package-lock.json), continuing without an install');
    }
    return 'none';
  }
  await mkdir(env['npm_config_cache'] ?? join(svcDir, '.npm-cache'), { recursive: true });
  const result = await withPrivateInstall(env, install, log, (installEnv) => {
    log('installing dependencies inline: npm ci --ignore-scripts (in .svc/)');
    return execa('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
      cwd: svcDir,
      env: installEnv,
      extendEnv: false,
      reject: false,
      all: true,
      cancelSignal: signal,
      timeout: 15 * 60_000,
    });
  });
  if (result.exitCode !== 0) {
    const tail = String(result.all ?? '').split('\n').slice(-20).join('\n');
    throw new JobFailure('SVC_ERR_AGENT_DEPS_INSTALL', `inline dependency install (npm ci in .svc/) failed with exit code ${String(result.exitCode)}: ${tail}`);
  }
  return 'installed';
}

/** PATH with this Node first, so `npm` and child scripts run on Node 24. */
export function pathWithNode(extra = '/usr/local/bin:/usr/bin:/bin'): string {
  return [dirname(process.execPath), ...extra.split(delimiter)].join(delimiter);
}
