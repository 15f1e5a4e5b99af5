// A warm spare step runner: the next job's runner process is started before the job arrives,
// so Node's start-up and the SDK load (most of a job's set-up time) happen while the agent is
// idle. Each spare runs exactly one job and is never reused: nothing carries over between jobs.
// One spare is kept, two once a job had to wait for a spare still loading (MAX_SPARES).
//
// Only for the process sandbox. The spare's workspace must be known before the job is: each
// spare owns a slot directory `<work dir>/slots/<n>/` whose `src/` becomes the job's tree
// (filled in place: under bwrap the workspace is bound at spawn time, so it is never replaced,
// only written into). Slot numbers are reused, so workflow module paths repeat and Node's compile
// cache keeps a bounded set of entries. Runner messages that arrive before a job adopts the spare
// (`runner.ready`) are held and replayed to the job's listener.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { SandboxExtensionPoint, SandboxProcess, SpawnRequest, Workspace } from '../../core/extension-points/sandbox.ts';
import { messageOf } from '../../core/errors.ts';

/** Consecutive spares that died before any job adopted them: stop starting new ones. */
const MAX_IDLE_DEATHS = 3;
/**
 * Spares kept at most. One, until a job takes a spare that has not finished loading (jobs come
 * faster than a runner loads, e.g. back to back on a busy machine): from then on two, so each
 * spare has two jobs' time to load. Each spare still runs one job; the cost is one more idle
 * process, only on an agent that showed it needs it.
 */
const MAX_SPARES = 2;
const WARM_UP_TIMEOUT_MS = 60_000;

export interface RunnerSpawn {
  /** The spawn request for a runner in `workspace` (argv, env, read paths), as the executor builds it. */
  request(workspace: Workspace): SpawnRequest;
}

export interface AdoptedRunner {
  /** The job's root directory (`slots/<n>`); `src/` in it is the workspace. */
  jobRoot: string;
  srcDir: string;
  workspace: Workspace;
  proc: SandboxProcess;
  /** Listen to the runner's messages; those that came before adoption are replayed first. */
  onMessage(listener: (message: unknown) => void): void;
  /** The runner has exited (before or after adoption). */
  exited(): boolean;
  /** Give the slot number back once the job's directories are removed. */
  release(): void;
}

interface Spare {
  slot: number;
  runner: AdoptedRunner;
  /** The runner said `runner.ready` (it has loaded the SDK) before a job took it. */
  loaded(): boolean;
}

export interface WarmRunnerOptions {
  logger: Logger;
  /** `<work dir>/slots`. */
  slotsRoot: string;
  sandbox: SandboxExtensionPoint;
  spawn: RunnerSpawn;
  /** An ephemeral agent runs one job: no spare after the first is taken. */
  oneShot?: boolean;
  /** Run `node <runner> --warm` once first (fills the compile cache); needs the real runner. */
  warmUp?: { runnerPath: string; env: Record<string, string> };
}

export class WarmRunners {
  readonly #options: WarmRunnerOptions;
  readonly #slots = new Set<number>();
  /** Spares up or starting, oldest first. */
  readonly #spares: Array<Promise<Spare | undefined>> = [];
  #depth = 1;
  #warmUp: Promise<void> | undefined;
  #closed = false;
  #taken = false;
  #takes = 0;
  #idleDeaths = 0;
  #warmUpChild: ChildProcess | undefined;

  constructor(options: WarmRunnerOptions) {
    this.#options = options;
  }

  /** Spares kept now (1, or MAX_SPARES once jobs outran the spares' load). */
  get depth(): number {
    return this.#depth;
  }

  /**
   * Spares up or starting now. `replenish()` starts them synchronously, so a test reads "one new
   * spare" from this right after it instead of waiting to see that no second slot appears.
   */
  get spares(): number {
    return this.#spares.length;
  }

  /** Whether the spare the next job would take has said `runner.ready` (false while none is up). */
  async nextLoaded(): Promise<boolean> {
    const head = this.#spares[0];
    if (head === undefined) return false;
    return (await head)?.loaded() ?? false;
  }

  /** Start spares until `depth` are up or starting (no-op after close or too many idle deaths). */
  replenish(): void {
    const oneShot = this.#options.oneShot === true;
    while (!this.#closed && this.#idleDeaths < MAX_IDLE_DEATHS && this.#spares.length < (oneShot ? 1 : this.#depth)) {
      if (oneShot && this.#taken) return;
      this.#warmUp ??= this.#runWarmUp();
      const spare = this.#warmUp.then(() => this.#start());
      this.#spares.push(spare);
      void spare.then((s) => {
        const at = this.#spares.indexOf(spare);
        if (s === undefined && at >= 0) this.#spares.splice(at, 1);
      });
    }
  }

  /**
   * The spare for a job (waiting for one still starting), or undefined when there is none or it
   * died idle. The next spare is started by the next `replenish()`.
   */
  async take(): Promise<AdoptedRunner | undefined> {
    const pending = this.#spares.shift();
    this.#taken = true;
    this.#takes++;
    if (pending === undefined) return undefined;
    const spare = await pending;
    if (spare === undefined) return undefined;
    if (spare.runner.exited()) {
      await this.#discard(spare);
      return undefined;
    }
    this.#idleDeaths = 0;
    // Not for the first job: its spare started with the agent, not after an earlier job.
    if (!spare.loaded() && this.#depth < MAX_SPARES && this.#takes > 1) {
      this.#depth = MAX_SPARES;
      this.#options.logger.debug({ spares: this.#depth }, 'a job took a spare step runner still loading; keeping more spares ahead');
    }
    return spare.runner;
  }

  /** Stop the idle spare and start no more. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#warmUpChild?.kill('SIGKILL');
    const pending = this.#spares.splice(0);
    for (const spare of await Promise.all(pending)) if (spare !== undefined) await this.#discard(spare);
  }

  async #runWarmUp(): Promise<void> {
    const warm = this.#options.warmUp;
    if (warm === undefined) return;
    const started = performance.now();
    // Our own code only (no workflow code): it may run outside the sandbox and write the cache.
    const ok = await new Promise<boolean>((resolve) => {
      const child = fork(warm.runnerPath, ['--warm'], { env: warm.env, stdio: 'ignore', execArgv: [] });
      this.#warmUpChild = child;
      const timer = setTimeout(() => child.kill('SIGKILL'), WARM_UP_TIMEOUT_MS);
      child.once('error', () => resolve(false));
      child.once('exit', (code) => {
        clearTimeout(timer);
        this.#warmUpChild = undefined;
        resolve(code === 0);
      });
    });
    this.#options.logger.debug({ ok, ms: Math.round(performance.now() - started) }, 'step runner warm-up');
  }

  #freeSlot(): number {
    let slot = 0;
    while (this.#slots.has(slot)) slot++;
    this.#slots.add(slot);
    return slot;
  }

  async #start(): Promise<Spare | undefined> {
    if (this.#closed) return undefined;
    const { logger, sandbox } = this.#options;
    const slot = this.#freeSlot();
    const jobRoot = join(this.#options.slotsRoot, String(slot));
    const srcDir = join(jobRoot, 'src');
    let workspace: Workspace | undefined;
    try {
      await rm(jobRoot, { recursive: true, force: true });
      await mkdir(srcDir, { recursive: true });
      workspace = await sandbox.prepareWorkspace({ jobId: `spare-${slot}`, sourceDir: srcDir });
      const proc = await sandbox.spawn(this.#options.spawn.request(workspace));
      const held: unknown[] = [];
      let listener: ((message: unknown) => void) | undefined;
      let loaded = false;
      proc.onMessage?.((message) => {
        if (listener !== undefined) return listener(message);
        if ((message as { type?: unknown } | null)?.type === 'runner.ready') loaded = true;
        held.push(message);
      });
      let exited = false;
      let adopted = false;
      const runner: AdoptedRunner = {
        jobRoot,
        srcDir,
        workspace,
        proc,
        onMessage: (next) => {
          listener = next;
          for (const message of held.splice(0)) next(message);
        },
        exited: () => exited,
        release: () => this.#slots.delete(slot),
      };
      const spare: Spare = { slot, runner, loaded: () => loaded };
      void proc.exited.then((exit) => {
        exited = true;
        if (adopted || this.#closed) return;
        this.#idleDeaths++;
        logger.warn({ slot, code: exit.code, signal: exit.signal }, 'the spare step runner exited before a job used it');
      });
      const take = runner.onMessage;
      runner.onMessage = (next) => {
        adopted = true;
        take(next);
      };
      return spare;
    } catch (error) {
      this.#idleDeaths++;
      logger.warn({ err: messageOf(error) }, 'could not start a spare step runner');
      if (workspace !== undefined) await sandbox.releaseWorkspace(workspace).catch(() => undefined);
      await rm(jobRoot, { recursive: true, force: true }).catch(() => undefined);
      this.#slots.delete(slot);
      return undefined;
    }
  }

  async #discard(spare: Spare): Promise<void> {
    const { sandbox } = this.#options;
    if (!spare.runner.exited()) await sandbox.kill(spare.runner.proc, { graceMs: 0 }).catch(() => undefined);
    await sandbox.releaseWorkspace(spare.runner.workspace).catch(() => undefined);
    await rm(spare.runner.jobRoot, { recursive: true, force: true }).catch(() => undefined);
    this.#slots.delete(spare.slot);
  }
}
