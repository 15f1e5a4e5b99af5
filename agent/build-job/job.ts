// A build job (`jobConfig.build`, spec core behaviour 3 and "Other records"): check the
// repository out at the run's commit, bundle the workflow directory, install its dependencies,
// and upload both to the build caches through pre-signed URLs:
//   bundle source         deterministic tar.gz of what the content hash covers (+ lock files);
//                         the staged tree is hashed again and must equal the run's contentHash
//   install dependencies  npm ci --ignore-scripts in the staged copy of .svc/, node_modules tarred
//   upload                cache.upload.request → PUT → cache.upload.complete, source then deps
// Nothing is uploaded unless every step succeeded: a failed build leaves no pointer, so the next
// event builds again, and the run's jobs are skipped by their need on the build.
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import { messageOf } from '../../core/errors.ts';
import type { AgentToOrchestrator, JobDispatch, OrchestratorToAgent } from '../../schemas/wire/agent.ts';
import { applyOverlay } from '../jobs/overlay.ts';
import { checkout } from '../jobs/checkout.ts';
import { locateWorkflow, verifyContentHash } from '../jobs/content-hash.ts';
import { uploadFile } from '../jobs/download.ts';
import { JobFailure } from '../jobs/failure.ts';
import { pathWithNode } from '../jobs/restore.ts';
import type { OrchestratorRequest } from '../jobs/runner-api.ts';
import { installDependencies } from './deps.ts';
import { bundleSource } from './source-bundle.ts';
import { formatDuration } from '../../core/durations.ts';

export const BUILD_STEPS = ['bundle source', 'install dependencies', 'upload'] as const;
export type BuildStepName = (typeof BUILD_STEPS)[number];

export interface BuildSteps {
  start(name: BuildStepName): void;
  finish(name: BuildStepName, status: 'completed' | 'failed' | 'skipped', reason?: string): void;
}

export interface BuildJobOptions {
  dispatch: JobDispatch;
  /** The job's work dir (removed by the caller afterwards). */
  jobRoot: string;
  /** Checkout directory inside jobRoot. */
  srcDir: string;
  /** Scratch HOME for git and npm. */
  home: string;
  signal: AbortSignal;
  sdkVersion: string;
  /** The proxy and CA variables the agent passes to jobs (SVC_AGENT_PASS_ENV): npm reads them too. */
  passedEnv?: Readonly<Record<string, string>>;
  /** A system line on the current step. */
  log(text: string): void;
  steps: BuildSteps;
  request: OrchestratorRequest;
  send(message: AgentToOrchestrator): void;
}

export interface BuildOutputs {
  sourceTarDigest: string;
  depsHash: string | null;
  [key: string]: unknown;
}


function refused(response: OrchestratorToAgent, what: string): string {
  const error = (response as { error?: { code: string; message: string } }).error;
  if (error !== undefined) throw new JobFailure('SVC_ERR_BUILD_UPLOAD', `${what}: the orchestrator refused the upload (${error.code}: ${error.message})`);
  const url = (response as { url?: unknown }).url;
  if (typeof url !== 'string' || url === '') throw new JobFailure('SVC_ERR_BUILD_UPLOAD', `${what}: the orchestrator answered without an upload URL`);
  return url;
}

/**
 * The lock's top-level `lockfileHash` (the dependency cache key), if the tree's lock has one, and
 * whether `workflow`'s entry installs with secrets (`registries` or `installEnv`).
 */
async function lockFactsOf(srcDir: string, workflow: string): Promise<{ lockfileHash: string | null; privateInstall: boolean }> {
  try {
    const lock = JSON.parse(await readFile(join(srcDir, '.svc', 'svc.lock.json'), 'utf8')) as { lockfileHash?: unknown; workflows?: unknown };
    const entry = (Array.isArray(lock.workflows) ? lock.workflows : []).find((w: { name?: unknown }) => w?.name === workflow) as { registries?: unknown[]; installEnv?: unknown[] } | undefined;
    const privateInstall = (entry?.registries?.length ?? 0) + (entry?.installEnv?.length ?? 0) > 0;
    return { lockfileHash: typeof lock.lockfileHash === 'string' ? lock.lockfileHash : null, privateInstall };
  } catch {
    return { lockfileHash: null, privateInstall: false };
  }
}

/** Runs one step: start, body, finish (failed with the error's message when it throws). */
async function step<T>(steps: BuildSteps, name: BuildStepName, log: (text: string) => void, body: () => Promise<T>): Promise<T> {
  steps.start(name);
  const started = Date.now();
  try {
    const value = await body();
    log(`${name} took ${formatDuration(Date.now() - started)}`);
    steps.finish(name, 'completed');
    return value;
  } catch (error) {
    steps.finish(name, 'failed', messageOf(error));
    throw error;
  }
}

async function upload(options: BuildJobOptions, cacheType: 'source' | 'dep', key: string, file: string, depsHash?: string): Promise<void> {
  const what = cacheType === 'source' ? 'source tarball' : 'dependency tarball';
  const response = await options.request({ type: 'cache.upload.request', jobId: options.dispatch.jobId, requestId: randomUUID(), cacheType, key }).catch((error: unknown) => {
    throw new JobFailure('SVC_ERR_BUILD_UPLOAD', `${what}: cache.upload.request failed: ${messageOf(error)}`, { cause: error });
  });
  const url = refused(response, what);
  try {
    await uploadFile(url, file, { signal: options.signal });
  } catch (error) {
    throw new JobFailure('SVC_ERR_BUILD_UPLOAD', `${what}: ${messageOf(error)}`, { cause: error });
  }
  // The orchestrator handles one agent's frames in order: this commit lands before job.status.
  options.send({ type: 'cache.upload.complete', jobId: options.dispatch.jobId, cacheType, key, ...(depsHash === undefined ? {} : { depsHash }) });
  options.log(`${what} uploaded (sha256 ${key})`);
}

/** The build; a failure's reason starts with `build failed:` (a cancel stays a cancel). */
export async function runBuildJob(options: BuildJobOptions): Promise<BuildOutputs> {
  try {
    return await build(options);
  } catch (error) {
    if (error instanceof JobFailure && error.status === 'cancelled') throw error;
    if (options.signal.aborted && options.signal.reason instanceof JobFailure) throw options.signal.reason;
    const code = error instanceof JobFailure ? error.code : 'SVC_ERR_BUILD_FAILED';
    throw new JobFailure(code, `build failed: ${messageOf(error)}`, { cause: error });
  }
}

async function build(options: BuildJobOptions): Promise<BuildOutputs> {
  const config = options.dispatch.jobConfig;
  const path = pathWithNode();
  await checkout({ dir: options.srcDir, auth: options.dispatch.sourceAuth, sha: config.sha, home: options.home, path, signal: options.signal, log: options.log });
  // `svc run remote`: the lock was compiled from the overlaid tree, so the bundle is built from it.
  if (config.overlay !== undefined) await applyOverlay({ overlay: config.overlay, jobRoot: options.jobRoot, srcDir: options.srcDir, log: options.log, signal: options.signal });
  const location = await locateWorkflow(options.srcDir, config.workflow);
  const { lockfileHash, privateInstall } = await lockFactsOf(options.srcDir, config.workflow);
  const buildDir = join(options.jobRoot, 'build');

  const source = await step(options.steps, 'bundle source', options.log, async () => {
    let bundle;
    try {
      bundle = await bundleSource({ repoRoot: options.srcDir, workDir: buildDir, hashFiles: location.hashFiles });
    } catch (error) {
      if (error instanceof JobFailure) throw error;
      throw new JobFailure('SVC_ERR_BUILD_BUNDLE', `the workflow directory could not be bundled: ${messageOf(error)}`, { cause: error });
    }
    // The staged tree is what jobs will run: it must hash to the contentHash the run matched.
    await verifyContentHash({ srcDir: bundle.stageDir, workflow: config.workflow, expected: config.contentHash, hashFiles: location.hashFiles, sdkVersion: options.sdkVersion });
    options.log(`source bundle: ${bundle.files.length} files, ${bundle.bytes} bytes, sha256 ${bundle.sha256}`);
    return bundle;
  });

  let deps: { file: string; sha256: string } | null = null;
  const depsSkip =
    lockfileHash === null ? 'the lock has no lockfileHash (no package lockfile)'
    : options.dispatch.depsUrl !== null ? `the dependency cache already holds ${lockfileHash}`
    : !lockfileHash.startsWith('npm:') ? `${lockfileHash.split(':')[0]} workspaces are not installed by build jobs (npm only: .svc/package-lock.json)`
    // The dependency cache is shared by every run whose lockfile hashes the same: packages fetched
    // with a workflow's registry credentials must not be served to runs that lack them.
    : privateInstall ? 'the workflow installs with registries/installEnv secrets; its dependencies are installed by each job, never put in the shared dependency cache'
    : null;
  if (depsSkip !== null) {
    options.steps.start('install dependencies');
    options.log(`install dependencies skipped: ${depsSkip}`);
    options.steps.finish('install dependencies', 'skipped', depsSkip);
  } else {
    deps = await step(options.steps, 'install dependencies', options.log, async () => {
      const out = await installDependencies({
        svcCopy: join(source.stageDir, '.svc'),
        out: join(buildDir, 'deps.tar.gz'),
        env: { ...options.passedEnv, PATH: path, HOME: options.home, npm_config_cache: join(options.jobRoot, 'npm-cache'), LANG: 'C.UTF-8' },
        signal: options.signal,
        log: options.log,
      });
      options.log(`dependency tarball (${platform()}-${arch()}): ${out.entries} entries, ${out.bytes} bytes, sha256 ${out.sha256}`);
      return out;
    });
  }

  await step(options.steps, 'upload', options.log, async () => {
    await upload(options, 'source', source.sha256, source.file);
    if (deps !== null) await upload(options, 'dep', deps.sha256, deps.file, deps.sha256);
  });
  await rm(buildDir, { recursive: true, force: true });
  return { sourceTarDigest: source.sha256, depsHash: deps?.sha256 ?? null };
}
