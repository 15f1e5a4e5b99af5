// One dispatched job, from `job.dispatch` to its terminal `job.status`: work dir, source
// (cache or checkout), content-hash check, dependencies, then the step runner inside the
// chosen sandbox with its messages relayed (steps, masked and batched logs, api requests) and
// cancellation (runner.cancel, then a kill of the sandbox's process tree after the grace period).
import { mkdirSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import type { SandboxProcess, Workspace } from '../../core/extension-points/sandbox.ts';
import { messageOf } from '../../core/errors.ts';
import type { AgentToOrchestrator, JobDispatch, JobRunStatus, StepHoldStatus, StepResult } from '../../schemas/wire/agent.ts';
import { RunnerToAgentMembers, type AgentToRunner, type ConcurrencyGroups, type JobProgress, type RunnerResult } from '../../schemas/wire/runner.ts';
import { compileMessageUnion, formatIssues } from '../../schemas/validate.ts';
import { SecretSet, MIN_MASKED_LENGTH, maskDeep } from '../logs/masker.ts';
import { LogPipeline } from '../logs/pipeline.ts';
import { checkout, checkoutFlags, type CheckoutOptions } from './checkout.ts';
import { applyOverlay } from './overlay.ts';
import { locateWorkflow, verifyContentHash } from './content-hash.ts';
import { JobFailure, cancelledFailure } from './failure.ts';
import { restoreDeps, restoreSource, pathWithNode } from './restore.ts';
import { installSecretValues } from './private-install.ts';
import { runBuildJob, type BuildSteps } from '../build-job/job.ts';
import { apiError, handleRunnerApi, type OrchestratorRequest, type StepDecision } from './runner-api.ts';
import { SetupTimings } from './timings.ts';
import { PhaseLog } from './phases.ts';
import { ProgressTracker } from './progress.ts';
import type { AdoptedRunner, WarmRunners } from './warm-runner.ts';
import { moveTreeInto, restoreDepsCached, restoreSourceCached } from './cached-restore.ts';
import type { CacheLease, TreeCache } from './tree-cache.ts';
import type { RepoStores, StoreLease } from './repo-store.ts';
import { NO_TELEMETRY, type AgentTelemetry, type CheckoutPhase } from '../telemetry.ts';
import { QuietNotice } from './quiet-notice.ts';
import { JobTrace } from './job-trace.ts';
import type { Tracing } from '../../core/tracing/index.ts';
import { jobStartEnv, runnerSpawnRequest } from './job-env.ts';
import { chooseSandbox, containerImage, containerOptions, type SandboxChoice } from './sandbox-choice.ts';

const checkRunnerMessage = compileMessageUnion(RunnerToAgentMembers);

export const SETUP_STEP = '(setup)';
/** The spec's sandbox vocabulary on the wire (process → bare-metal). */
export const SANDBOX_WIRE_NAMES: Readonly<Record<string, string>> = { process: 'bare-metal', container: 'container', firecracker: 'firecracker' };
export const DEFAULT_GRACE_SECONDS = 10;
export const DEFAULT_HOOK_TIMEOUT_MS = 5 * 60_000;
const READY_TIMEOUT_MS = 60_000;
/** After `runner.result`, how long the runner may take to exit before it is killed. */
const EXIT_AFTER_RESULT_MS = 10_000;

export type { SandboxChoice };

export interface JobEnvironment {
  logger: Logger;
  /** Parent of every job's work dir. */
  workRoot: string;
  /** Sandboxes by name, availability already probed. */
  sandboxes: ReadonlyMap<string, SandboxChoice>;
  /** Sandbox for jobs without a container. */
  defaultSandbox: string;
  /** Absolute path of the step runner entry (agent/runner/main.ts or .js). */
  runnerPath: string;
  /** Host paths the runner reads (Node binary, package root) for sandboxes that mount them. */
  readPaths: readonly string[];
  sdkVersion: string;
  send(message: AgentToOrchestrator): void;
  request: OrchestratorRequest;
  /** Node compile cache for the step runner (NODE_COMPILE_CACHE), kept between jobs. */
  compileCacheDir?: string;
  /** Extracted source and dependency trees kept between jobs (docs/agent.md "Tree caches"). */
  caches?: { source: TreeCache; deps: TreeCache };
  /** Repository object stores for checkouts (docs/agent.md "Repository stores"). */
  repos?: RepoStores;
  /** Warm spare runners for `warm.sandbox` jobs (docs/agent.md "Warm spare runner"). */
  warm?: { sandbox: string; runners: WarmRunners };
  /** The agent's job metrics (agent/metrics.ts when SVC_AGENT_METRICS_PORT is set). */
  telemetry?: AgentTelemetry;
  /** Spans of jobs dispatched with a trace context (docs/tracing.md). */
  tracing?: Tracing;
  /** Variables every job gets from the agent's (or, locally, the user's) environment: SVC_AGENT_PASS_ENV. */
  passedEnv?: Readonly<Record<string, string>>;
  /** Quiet time before a "still running" line (default 60 s; tests shorten it). */
  quietNoticeMs?: number;
  /** A resumed job: the step checkpoints its previous agent process left (agent/jobs/progress.ts). */
  resume?: JobProgress;
  /** Where a static agent keeps this job's step checkpoints. */
  saveProgress?: (progress: JobProgress) => Promise<void>;
}

const CHECKOUT_PHASES: Readonly<Record<string, CheckoutPhase>> = { storeWait: 'store_wait', fetch: 'fetch', materialise: 'materialise' };

export { jobStartEnv, runnerSpawnRequest };

type JobStepResult = Static<typeof StepResult>;
/** How the job ended; `skipped`/`generated`/`concurrencyGroups` are forwarded for scheduling pseudo-jobs. */
type Terminal = {
  status: Exclude<JobRunStatus, 'running'>;
  reason?: string;
  outputs?: Record<string, unknown>;
  skipped?: boolean;
  generated?: Static<typeof RunnerResult>['generated'];
  concurrencyGroups?: ConcurrencyGroups;
  /** With `failed`: the failing command's exit code, as the step runner reported it. */
  exitCode?: number;
};

function safeName(jobId: string): string {
  return jobId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 120) || 'job';
}

export class DispatchedJob {
  readonly jobId: string;
  readonly dispatch: JobDispatch;
  #status: JobRunStatus = 'running';
  readonly #env: JobEnvironment;
  readonly #logger: Logger;
  readonly #secrets = new SecretSet();
  readonly #logs: LogPipeline;
  readonly #abort = new AbortController();
  #cancel: { reason: string; force: boolean } | undefined;
  #proc: SandboxProcess | undefined;
  #sandbox: SandboxChoice | undefined;
  #killTimer: NodeJS.Timeout | undefined;
  #currentStep = SETUP_STEP;
  readonly #steps = new Map<string, JobStepResult>();
  readonly #timings = new SetupTimings();
  /** Set-up phases in wall-clock time for the orchestrator's timeline (`job.status` phases). */
  readonly #phases = new PhaseLog();
  readonly #telemetry: AgentTelemetry;
  /** Step-hold decisions pushed by the orchestrator, by step index, and who waits for them. */
  readonly #stepDecisions = new Map<number, StepDecision>();
  readonly #stepWaiters = new Map<number, Set<(decision: StepDecision) => void>>();
  readonly #quiet: QuietNotice;
  readonly #progress: ProgressTracker;
  readonly #trace: JobTrace | undefined;
  readonly done: Promise<void>;

  constructor(dispatch: JobDispatch, env: JobEnvironment) {
    this.jobId = dispatch.jobId;
    this.dispatch = dispatch;
    this.#env = env;
    this.#telemetry = env.telemetry ?? NO_TELEMETRY;
    this.#logger = env.logger.child({ jobId: dispatch.jobId, runId: dispatch.runId });
    let short = 0;
    const values = [
      ...Object.values(dispatch.jobConfig.secrets ?? {}),
      ...installSecretValues(dispatch.jobConfig.install),
      dispatch.sourceAuth.token,
      dispatch.workflowAuth?.token,
    ];
    this.#progress = new ProgressTracker({ resume: env.resume, save: env.saveProgress, logger: this.#logger });
    values.push(...this.#progress.restoredSecrets());
    for (const value of values) if (value !== undefined && value !== '' && !this.#secrets.add(value)) short++;
    // A resumed job's finished steps, in its step list as they were (reasons masked as on the wire).
    for (const step of this.#progress.restoredResults()) this.#steps.set(step.name, step.reason === undefined ? step : { ...step, reason: this.#secrets.mask(step.reason) });
    this.#logs = new LogPipeline({
      secrets: this.#secrets,
      // Any line sent restarts the quiet time of the "still running" notices.
      send: (chunk) => void (this.#quiet.output(), env.send({ type: 'log.chunk', jobId: this.jobId, seq: chunk.seq, lines: chunk.lines })),
    });
    this.#quiet = new QuietNotice({ ...(env.quietNoticeMs === undefined ? {} : { everyMs: env.quietNoticeMs }), notice: (text) => this.#system(text) });
    if (short > 0) this.#system(`${short} secret value(s) shorter than ${MIN_MASKED_LENGTH} characters are not masked in this log`);
    this.#trace = JobTrace.start(env.tracing, dispatch, this.#timings);
    this.done = this.#run();
  }

  get status(): JobRunStatus {
    return this.#status;
  }

  /** `job.cancel`: ask the runner to stop; kill the sandbox after the grace period (at once when forced). */
  cancel(reason: string, force: boolean): void {
    if (this.#status !== 'running') return;
    const first = this.#cancel === undefined;
    this.#cancel = { reason, force: force || (this.#cancel?.force ?? false) };
    this.#system(`cancel requested${force ? ' (force)' : ''}: ${reason}`);
    this.#abort.abort(cancelledFailure(reason));
    const proc = this.#proc;
    const sandbox = this.#sandbox;
    if (proc === undefined || sandbox === undefined) return;
    proc.send?.({ type: 'runner.cancel', reason, force } satisfies AgentToRunner);
    if (force) {
      if (this.#killTimer !== undefined) clearTimeout(this.#killTimer);
      void sandbox.sandbox.kill(proc, { graceMs: 0 }).catch((error: unknown) => this.#logger.warn({ err: error }, 'force kill failed'));
    } else if (first) {
      const graceMs = Math.round((this.dispatch.jobConfig.gracePeriodSeconds ?? DEFAULT_GRACE_SECONDS) * 1000);
      this.#killTimer = setTimeout(() => {
        this.#system(`grace period of ${graceMs / 1000}s over: stopping the sandbox`);
        void sandbox.sandbox.kill(proc, { graceMs: 5_000 }).catch((error: unknown) => this.#logger.warn({ err: error }, 'kill after grace failed'));
      }, graceMs);
    }
  }

  /** `approval.step.decision`: kept (a waiter may register later) and handed to any waiter. */
  stepDecision(index: number, status: StepHoldStatus, reason: string): void {
    const decision = { status, reason };
    this.#stepDecisions.set(index, decision);
    for (const wake of this.#stepWaiters.get(index) ?? []) wake(decision);
    this.#stepWaiters.delete(index);
  }

  /** A pushed decision for step `index`, or null after `ms` or an abort (the caller asks again). */
  #awaitStepDecision(index: number, ms: number, signal: AbortSignal): Promise<StepDecision | null> {
    const known = this.#stepDecisions.get(index);
    if (known !== undefined) return Promise.resolve(known);
    return new Promise((resolve) => {
      const waiters = this.#stepWaiters.get(index) ?? new Set();
      this.#stepWaiters.set(index, waiters);
      const done = (decision: StepDecision | null) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        waiters.delete(wake);
        resolve(decision);
      };
      const wake = (decision: StepDecision) => done(decision);
      const onAbort = () => done(null);
      const timer = setTimeout(() => done(null), ms);
      waiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #system(text: string): void {
    this.#logs.line(this.#currentStep, 'system', text);
  }

  async #run(): Promise<void> {
    const startedAt = new Date().toISOString();
    const config = this.dispatch.jobConfig;
    this.#env.send({ type: 'job.status', jobId: this.jobId, status: 'running', steps: [], startedAt });
    this.#quiet.start();
    let jobRoot = join(this.#env.workRoot, 'jobs', safeName(this.jobId));
    let workspace: Workspace | undefined;
    let spare: AdoptedRunner | undefined;
    let spareUsed = false;
    const caches = this.#env.caches;
    let sourceLease: CacheLease | undefined;
    let depsLease: CacheLease | undefined;
    let repoLease: StoreLease | undefined;
    let terminal: Terminal;
    try {
      const choice = chooseSandbox(this.dispatch, this.#env.sandboxes, this.#env.defaultSandbox);
      this.#sandbox = choice;
      this.#env.send({ type: 'job.context', jobId: this.jobId, nodeVersion: process.version, os: platform(), arch: arch(), sandbox: SANDBOX_WIRE_NAMES[choice.name] ?? choice.name });
      const warm = this.#env.warm;
      if (config.build !== true && warm !== undefined && warm.sandbox === choice.name) {
        spare = await warm.runners.take();
        this.#telemetry.warmRunner(spare !== undefined);
      }
      if (spare !== undefined) {
        // The next spare is started once this job's first step runs (or its set-up ends): a
        // runner loading beside the checkout took a core from it on a busy 2-core machine.
        // The spare's slot is this job's directory: its src/ is the workspace the runner was started in.
        jobRoot = spare.jobRoot;
        workspace = spare.workspace;
        this.#timings.mark('spare');
      } else {
        await rm(jobRoot, { recursive: true, force: true });
      }
      const srcDir = spare?.srcDir ?? join(jobRoot, 'src');
      const home = join(jobRoot, 'home');
      // Two small directories: synchronously, cheaper than two thread-pool round trips.
      mkdirSync(srcDir, { recursive: true });
      mkdirSync(home, { recursive: true });
      this.#timings.mark('workDir');
      const signal = this.#abort.signal;
      const log = (text: string) => this.#system(text);
      const path = pathWithNode();
      if (config.build === true) {
        // A build job bundles and uploads the caches instead of running workflow steps.
        const outputs = await runBuildJob({
          dispatch: this.dispatch,
          jobRoot,
          srcDir,
          home,
          signal,
          sdkVersion: this.#env.sdkVersion,
          ...(this.#env.passedEnv === undefined ? {} : { passedEnv: this.#env.passedEnv }),
          log,
          steps: this.#buildSteps(),
          request: this.#env.request,
          send: this.#env.send,
        });
        this.#timings.mark('build');
        terminal = { status: 'completed', outputs };
      } else {
        if (this.dispatch.sourceTarUrl !== null) {
          const source = { url: this.dispatch.sourceTarUrl, digest: this.dispatch.sourceTarDigest, jobRoot, srcDir, log, signal };
          const restore = (into: string) =>
            this.#phases.time('source_restore', () => (caches === undefined ? restoreSource({ ...source, srcDir: into }).then(() => undefined) : restoreSourceCached({ ...source, srcDir: into, cache: caches.source })));
          if (config.checkout?.enabled === true || config.overlay !== undefined) {
            // The project the steps work on comes from git; the workflow tree the lock was
            // hashed over comes from the cache and replaces the checkout's `.svc/`. The tree is
            // staged beside the workspace while the checkout fetches, then moved over it.
            // The checkout starts first: it is the long pole, and the staging directory's set-up
            // (two file-system round trips) runs beside it instead of before it.
            const checkingOut = this.#checkout(choice, { dir: srcDir, auth: this.dispatch.sourceAuth, sha: config.sha, depth: config.checkout?.depth, home, path, passedEnv: this.#env.passedEnv, signal, log });
            const staging = join(jobRoot, 'overlay');
            const copyStart = performance.now();
            const staged = (async () => {
              await rm(staging, { recursive: true, force: true });
              await mkdir(staging, { recursive: true });
              return restore(staging);
            })().finally(() => this.#timings.set('overlay', performance.now() - copyStart));
            const [checkedOut, restored] = await Promise.allSettled([checkingOut, staged]);
            if (checkedOut.status === 'fulfilled') repoLease = checkedOut.value;
            if (restored.status === 'fulfilled') sourceLease = restored.value;
            if (checkedOut.status === 'rejected') throw checkedOut.reason;
            if (restored.status === 'rejected') throw restored.reason;
            await rm(join(srcDir, '.svc'), { recursive: true, force: true });
            await moveTreeInto(staging, srcDir);
          } else {
            sourceLease = await restore(srcDir);
          }
        } else {
          repoLease = await this.#checkout(choice, { dir: srcDir, auth: this.dispatch.sourceAuth, sha: config.sha, depth: config.checkout?.depth, home, path, passedEnv: this.#env.passedEnv, signal, log });
        }
        // `svc run remote`: the developer's uncommitted changes on top of the commit.
        if (config.overlay !== undefined) await this.#phases.time('overlay', () => applyOverlay({ overlay: config.overlay!, jobRoot, srcDir, log, signal }));
        this.#timings.mark('source');
        this.#throwIfCancelled();
        const location = await locateWorkflow(srcDir, config.workflow);
        // Same tarball digest ⇒ same bytes ⇒ same hash: a tree copied intact from a cache entry
        // already verified for this workflow's hash inputs is not hashed again. A checkout job's
        // tree also holds the checkout (hashFiles may name its files): always hashed.
        const fact = `contentHash\0${config.contentHash}\0${location.hashFiles.join('\0')}`;
        const checkedOut = this.dispatch.sourceTarUrl === null || config.checkout?.enabled === true || config.overlay !== undefined;
        if (!checkedOut && sourceLease?.hasFact(fact) === true) {
          log(`workflow content hash verified (${config.contentHash.replace(/^sha256:/, '')}; this exact source tree was verified by an earlier job)`);
        } else {
          const hash = await verifyContentHash({ srcDir, workflow: config.workflow, expected: config.contentHash, hashFiles: location.hashFiles, sdkVersion: this.#env.sdkVersion });
          log(`workflow content hash verified (${hash.computed})`);
          if (!checkedOut) sourceLease?.addFact(fact);
        }
        sourceLease?.release();
        sourceLease = undefined;
        this.#timings.mark('contentHash');
        this.#throwIfCancelled();
        const deps = {
          url: this.dispatch.depsUrl,
          hash: this.dispatch.depsHash,
          jobRoot,
          srcDir,
          log,
          signal,
          installEnv: { ...this.#env.passedEnv, PATH: path, HOME: home, npm_config_cache: join(jobRoot, 'npm-cache'), LANG: 'C.UTF-8' },
          install: config.install,
        };
        await this.#phases.time('deps', async () => {
          if (caches === undefined) await restoreDeps(deps);
          else depsLease = (await restoreDepsCached({ ...deps, cache: caches.deps })).lease;
        });
        this.#timings.mark('deps');
        this.#throwIfCancelled();
        workspace ??= await choice.sandbox.prepareWorkspace({ jobId: this.jobId, sourceDir: srcDir });
        this.#timings.mark('workspace');
        spareUsed = spare !== undefined;
        const result = await this.#runRunner(choice, workspace, location.file, location.exportName, spare);
        terminal = result;
      }
    } catch (error) {
      const failure = this.#cancel !== undefined ? cancelledFailure(this.#cancel.reason) : error;
      if (failure instanceof JobFailure) {
        terminal = { status: failure.status, reason: failure.message };
      } else {
        this.#logger.error({ err: error }, 'job set-up failed');
        terminal = { status: 'failed', reason: `agent error: ${messageOf(error)}` };
      }
      if (terminal.reason !== undefined) this.#logs.line(this.#currentStep, 'system', terminal.reason);
    } finally {
      if (this.#killTimer !== undefined) clearTimeout(this.#killTimer);
      // A spare taken for a job that failed before its steps: stop it, it must run nothing else.
      if (spare !== undefined && !spareUsed && !spare.exited() && this.#sandbox !== undefined) {
        await this.#sandbox.sandbox.kill(spare.proc, { graceMs: 0 }).catch((error: unknown) => this.#logger.warn({ err: error }, 'stopping the unused spare runner failed'));
      }
      if (workspace !== undefined && this.#sandbox !== undefined) {
        await this.#sandbox.sandbox.releaseWorkspace(workspace).catch((error: unknown) => this.#logger.warn({ err: error }, 'workspace release failed'));
      }
      await rm(jobRoot, { recursive: true, force: true }).catch((error: unknown) => this.#logger.warn({ err: error }, 'work dir removal failed'));
      spare?.release();
      // After the job's tree is gone: nothing links into the dependency entry or borrows the store's objects.
      repoLease?.release();
      sourceLease?.release();
      depsLease?.release();
      this.#env.warm?.runners.replenish();
    }
    // Checkpoint writes land before the agent removes the job's records.
    await this.#progress.settled();
    this.#quiet.stop();
    this.#logs.close();
    this.#status = terminal.status;
    const reason = terminal.reason === undefined ? undefined : this.#secrets.mask(terminal.reason).slice(0, 10_000);
    // The job span ends before its report goes: the orchestrator's job report span starts on receipt.
    this.#trace?.end(terminal.status, reason);
    this.#env.send({
      type: 'job.status',
      jobId: this.jobId,
      status: terminal.status,
      steps: [...this.#steps.values()],
      startedAt,
      finishedAt: new Date().toISOString(),
      ...(reason === undefined ? {} : { reason }),
      // Job outputs are stored and read by other jobs: released secrets and secret outputs masked.
      ...(terminal.outputs === undefined ? {} : { outputs: maskDeep(terminal.outputs, this.#secrets) as Record<string, unknown> }),
      ...(terminal.skipped === true ? { skipped: true as const } : {}),
      ...(terminal.generated === undefined ? {} : { generated: terminal.generated }),
      ...(terminal.concurrencyGroups === undefined ? {} : { concurrencyGroups: terminal.concurrencyGroups }),
      // Left out for an orchestrator below protocol 5, as exitCode (peer-protocol.ts).
      ...this.#phases.wire(),
      // The connection leaves it out for an orchestrator below protocol 5 (peer-protocol.ts).
      ...(terminal.status === 'failed' && terminal.exitCode !== undefined ? { exitCode: terminal.exitCode } : {}),
    });
  }

  #traceStep(index: number, name: string, status: string, traceparent: string | undefined, reason: string | undefined): void {
    if (this.#trace === undefined) return;
    if (status === 'running') this.#trace.stepStarted(index, traceparent);
    else this.#trace.stepEnded(index, name, status, reason === undefined ? undefined : this.#secrets.mask(reason));
  }

  /** Build steps as job steps: `step.status` as they go, in the final `job.status` too. */
  #buildSteps(): BuildSteps {
    const index = new Map<string, number>();
    const at = () => new Date().toISOString();
    return {
      start: (name) => {
        index.set(name, index.get(name) ?? index.size);
        this.#currentStep = name;
        this.#quiet.step();
        const now = at();
        this.#steps.set(name, { name, status: 'running', startedAt: now });
        this.#trace?.stepStarted(index.get(name)!, this.#trace.reserveStep());
        this.#env.send({ type: 'step.status', jobId: this.jobId, index: index.get(name)!, name, status: 'running', at: now });
      },
      finish: (name, status, reason) => {
        const now = at();
        const masked = reason === undefined ? undefined : this.#secrets.mask(reason).slice(0, 10_000);
        const startedAt = this.#steps.get(name)?.startedAt ?? now;
        this.#steps.set(name, { name, status, startedAt, finishedAt: now, ...(masked === undefined ? {} : { reason: masked }) });
        this.#trace?.stepEnded(index.get(name) ?? index.size, name, status, masked);
        this.#env.send({ type: 'step.status', jobId: this.jobId, index: index.get(name) ?? index.size, name, status, at: now, ...(masked === undefined ? {} : { reason: masked }) });
        this.#currentStep = SETUP_STEP;
      },
    };
  }

  /**
   * The commit's tree: from the repository store (default depth 1, sandboxes that see the host's
   * paths), else a fetch of its own. A firecracker guest gets a copy of the workspace, where the
   * store the `.git` borrows from does not exist; other depths need history the store does not keep.
   */
  #checkout(choice: SandboxChoice, base: CheckoutOptions): Promise<StoreLease | undefined> {
    return this.#phases.time('checkout', () => this.#checkoutTree(choice, base));
  }

  async #checkoutTree(choice: SandboxChoice, base: CheckoutOptions): Promise<StoreLease | undefined> {
    const options = { ...base, ...checkoutFlags(this.dispatch.jobConfig.checkout) };
    const part = this.#phases.parts('checkout');
    const repos = this.#env.repos;
    let last = performance.now();
    const observe = (phase: CheckoutPhase) => {
      const now = performance.now();
      this.#telemetry.checkoutPhase(phase, (now - last) / 1000);
      last = now;
    };
    if (repos === undefined || (options.depth ?? 1) !== 1 || choice.name === 'firecracker') {
      await checkout(options);
      observe('clone');
      return undefined;
    }
    return repos.checkout({
      ...options,
      phase: (name) => {
        this.#timings.mark(name);
        observe(CHECKOUT_PHASES[name]!);
        part(CHECKOUT_PHASES[name]!);
      },
    });
  }

  #throwIfCancelled(): void {
    if (this.#cancel !== undefined) throw cancelledFailure(this.#cancel.reason);
  }

  async #runRunner(choice: SandboxChoice, workspace: Workspace, workflowFile: string, exportName: string, spare: AdoptedRunner | undefined): Promise<Terminal> {
    const config = this.dispatch.jobConfig;
    const tmp = workspace.tmpDir ?? workspace.dir;
    const image = containerImage(this.dispatch);
    if (choice.name === 'container' && image === undefined) throw new JobFailure('SVC_ERR_AGENT_CONTAINER_IMAGE', 'the job asks for a container but names no image (container.image)');
    // A spare that died while the tree was prepared is replaced by a fresh runner in the same workspace.
    const warm = spare !== undefined && !spare.exited() ? spare : undefined;
    const container = choice.name === 'container' ? containerOptions(this.dispatch) : undefined;
    const proc = warm?.proc ?? (await choice.sandbox.spawn({ ...runnerSpawnRequest(this.#env, workspace, image), ...(container === undefined ? {} : { containerOptions: container.list }) }));
    const onMessage = (listener: (message: unknown) => void) => (warm !== undefined ? warm.onMessage(listener) : proc.onMessage?.(listener));
    this.#proc = proc;
    this.#timings.mark('spawn');
    if (this.#cancel !== undefined) this.cancel(this.#cancel.reason, this.#cancel.force);
    const decoder = { stdout: new TextDecoder(), stderr: new TextDecoder() };
    proc.stdout.on('data', (chunk: Buffer) => this.#logs.raw(this.#currentStep, 'stdout', decoder.stdout.decode(chunk, { stream: true })));
    proc.stderr.on('data', (chunk: Buffer) => this.#logs.raw(this.#currentStep, 'stderr', decoder.stderr.decode(chunk, { stream: true })));

    let result: Static<typeof RunnerResult> | undefined;
    let readyTimer: NodeJS.Timeout | undefined;
    let ready = false;
    const start = () => {
      if (ready) return;
      ready = true;
      if (readyTimer !== undefined) clearTimeout(readyTimer);
      proc.send?.({
        type: 'runner.start',
        workflowFile,
        exportName,
        workflowName: config.workflow,
        jobName: config.job,
        workspace: workspace.dir,
        ...(config.matrix === undefined ? {} : { matrix: config.matrix }),
        event: config.event,
        changedFiles: config.changedFiles,
        // A container's `--env` variables under the workflow's own `env`.
        env: jobStartEnv(this.#env.passedEnv, tmp, { ...container?.env, ...config.env }),
        secrets: config.secrets ?? {},
        needs: config.needs,
        isTestRun: config.isTestRun,
        // Scheduling pseudo-jobs (docs/scheduling.md): the filter, the workflow hooks, generators.
        evaluateWorkflowFilter: config.role === 'filter',
        ...(config.role === 'hooks' ? { workflowHooks: true } : {}),
        ...(config.role === undefined ? {} : { role: config.role }),
        ...(config.workflowOutcome === undefined ? {} : { workflowOutcome: config.workflowOutcome }),
        ...(config.generator === undefined ? {} : { generator: config.generator }),
        ...(config.approvalSteps === undefined || config.approvalSteps.length === 0 ? {} : { approvalSteps: config.approvalSteps }),
        hookTimeoutMs: DEFAULT_HOOK_TIMEOUT_MS,
        ...(this.#trace?.traceparent === undefined ? {} : { traceparent: this.#trace.traceparent }),
        ...(config.timeoutMs === undefined ? {} : { jobTimeoutMs: config.timeoutMs }),
        ...this.#progress.begin(workspace.dir),
      } satisfies AgentToRunner);
    };
    readyTimer = setTimeout(() => {
      this.#system(`the step runner did not report ready within ${READY_TIMEOUT_MS / 1000}s; stopping it`);
      void choice.sandbox.kill(proc, { graceMs: 2_000 }).catch(() => undefined);
    }, READY_TIMEOUT_MS);
    let exitTimer: NodeJS.Timeout | undefined;
    let jobTimer: NodeJS.Timeout | undefined;
    if (config.timeoutMs !== undefined) {
      // The runner enforces the timeout itself; this is the backstop when it cannot.
      const backstop = config.timeoutMs + (config.gracePeriodSeconds ?? DEFAULT_GRACE_SECONDS) * 1000 + 30_000;
      jobTimer = setTimeout(() => this.cancel(`job timed out after ${config.timeoutMs}ms`, true), backstop);
    }
    onMessage((raw) => {
      const checked = checkRunnerMessage.validate(raw);
      if (!checked.ok) {
        this.#logger.warn({ issues: formatIssues(checked.issues) }, 'refused a step runner message');
        return;
      }
      const message = checked.value;
      switch (message.type) {
        case 'runner.ready':
          this.#timings.mark('runnerReady');
          start();
          break;
        case 'runner.step': {
          this.#traceStep(message.index, message.name, message.status, message.traceparent, message.reason);
          if (message.status === 'running') {
            this.#progress.running(message.index, message.name);
            if (this.#currentStep === SETUP_STEP && this.#steps.size === 0) {
              this.#timings.mark('firstStep');
              const timings = this.#timings.snapshot();
              this.#logger.debug({ timings }, 'job set-up timings');
              this.#telemetry.firstStep(timings['total']! / 1000, (timings['runnerReady'] ?? 0) / 1000);
              this.#env.warm?.runners.replenish();
              // Set-up is over: the timeline shows its phases while the steps run.
              this.#env.send({ type: 'job.status', jobId: this.jobId, status: 'running', steps: [], ...this.#phases.wire() });
            }
            this.#currentStep = message.name;
            this.#quiet.step();
          }
          const previous = this.#steps.get(message.name);
          const reason = message.reason === undefined ? undefined : this.#secrets.mask(message.reason);
          const ending = { ...(reason === undefined ? {} : { reason }), ...(message.exitCode === undefined ? {} : { exitCode: message.exitCode }) };
          this.#steps.set(message.name, {
            name: message.name,
            status: message.status,
            ...(previous?.startedAt !== undefined ? { startedAt: previous.startedAt } : message.status === 'running' ? { startedAt: message.at } : {}),
            ...(message.status !== 'running' ? { finishedAt: message.at } : {}),
            ...ending,
          });
          this.#env.send({ type: 'step.status', jobId: this.jobId, index: message.index, name: message.name, status: message.status, at: message.at, ...ending });
          break;
        }
        case 'runner.log':
          this.#logs.line(message.step, message.stream, message.text, message.at);
          break;
        case 'runner.checkpoint':
          this.#progress.checkpoint(message.step);
          break;
        case 'runner.secret':
          this.#secrets.add(message.value);
          break;
        case 'api.request': {
          const { requestId, api, args } = message;
          // A step waiting for its approval is not running: no "still running" lines meanwhile.
          const answer = handleRunnerApi(api, args, {
            jobId: this.jobId,
            workspace: workspace.dir,
            scratch: tmp,
            secrets: this.#secrets,
            request: this.#env.request,
            send: this.#env.send,
            signal: this.#abort.signal,
            awaitStepDecision: (index, ms) => this.#awaitStepDecision(index, ms, this.#abort.signal),
          });
          (api === 'step.approval' ? this.#quiet.pauseDuring(answer) : answer).then(
            (value) => proc.send?.({ type: 'api.response', requestId, result: value } satisfies AgentToRunner),
            (error: unknown) => proc.send?.({ type: 'api.response', requestId, error: apiError(error) } satisfies AgentToRunner),
          );
          break;
        }
        case 'runner.result':
          result = message;
          for (const step of message.steps) this.#steps.set(step.name, { ...step, ...(step.reason === undefined ? {} : { reason: this.#secrets.mask(step.reason) }) });
          exitTimer = setTimeout(() => void choice.sandbox.kill(proc, { graceMs: 2_000 }).catch(() => undefined), EXIT_AFTER_RESULT_MS);
          break;
      }
    });
    const exit = await proc.exited;
    for (const t of [readyTimer, exitTimer, jobTimer]) if (t !== undefined) clearTimeout(t);
    this.#proc = undefined;
    const tail = { stdout: decoder.stdout.decode(), stderr: decoder.stderr.decode() };
    if (tail.stdout) this.#logs.raw(this.#currentStep, 'stdout', tail.stdout);
    if (tail.stderr) this.#logs.raw(this.#currentStep, 'stderr', tail.stderr);
    if (result !== undefined) {
      const reason = result.reason;
      const generated = result.generated === undefined ? {} : { generated: result.generated };
      const groups = result.concurrencyGroups === undefined ? {} : { concurrencyGroups: result.concurrencyGroups };
      if (result.status === 'skipped') return { status: 'completed', reason: reason === undefined ? 'skipped' : `skipped: ${reason}`, outputs: result.outputs, skipped: true };
      const exitCode = result.exitCode === undefined ? {} : { exitCode: result.exitCode };
      return { status: result.status, ...(reason === undefined ? {} : { reason }), outputs: result.outputs, ...generated, ...groups, ...exitCode };
    }
    if (this.#cancel !== undefined) return { status: 'cancelled', reason: `cancelled: ${this.#cancel.reason}` };
    const how = exit.signal !== null ? `signal ${exit.signal}` : `exit code ${String(exit.code)}`;
    return { status: 'failed', reason: `the step runner ended (${how}) before reporting a result` };
  }
}
