// The runner proper, loaded by main.ts once it has said runner.ready. Installs the output
// capture and the process handlers, and returns the function inbound IPC messages go to.
import { rm } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import { sdkEntryUrl } from '../../workflow/sdk-resolution.ts';
import { messageOf } from '../../core/errors.ts';
import type { RunnerStart, RunnerToAgent } from '../../schemas/wire/runner.ts';
import { allActivities, currentActivity } from './activity.ts';
import { RunnerChannel } from './ipc.ts';
import { RunnerJob, type ResultMessage } from './job.ts';
import { loadJob, loadWorkflow } from './load-workflow.ts';
import { FilterExecution, findGeneratedJob, GenerateExecution, HooksExecution, newRuntime, type Execution } from './roles.ts';
import { captureProcessOutput, LogSink } from './log-capture.ts';
import type { RunnerTransport } from './transport.ts';

/** Load the SDK entry workflow files import as `svc/sdk` (the same instance they will get). */
export async function preloadSdk(): Promise<void> {
  await import(sdkEntryUrl());
}

/**
 * TypeScript of the kinds workflow files hold. Stripping it in the spare compiles the parts of
 * the stripper (WebAssembly, compiled lazily function by function) a real file needs: a one-line
 * sample left the first job's import at about 100–200 ms, this one at about 30–70 ms (load 25).
 * Only erasable syntax: the stripper refuses the rest.
 */
export const TYPESCRIPT_SAMPLE = `
import type { Job } from 'svc/sdk';
import { job, step, type Step } from 'svc/sdk';
export interface Options<T extends object = {}> { readonly name?: string; items: Array<T | null>; [key: string]: unknown }
export type Outcome = { ok: true; value: number } | ({ ok: false } & Record<string, never>);
declare const marker: unique symbol;
export abstract class Base<T> { private readonly count: number = 1; items: T[] = []; abstract run(): Promise<void>; get first(): T | undefined { return this.items[0] as T; } static of<V>(v: V): V[] { return [v] satisfies V[]; } }
export function check<T>(this: void, value: T, ...rest: readonly number[]): asserts value is NonNullable<T> { if (!value) throw new Error(\`missing \${String(value!)} \${rest.length}\`); }
export const wait = async <T,>(x: Promise<T>): Promise<T> => (await x) as unknown as T;
let later!: number;
const table = { a: 1, b: 2 } as const;
for (const [key, n] of Object.entries(table) as Array<[string, number]>) later = n + key.length;
export default job({ runsOn: 'linux', steps: (s: Step) => s.step('build', async (ctx: { $: (s: TemplateStringsArray) => Promise<{ stdout: string }> }) => { const { stdout } = await ctx.$\`npm ci\`; return { out: stdout }; }) });
`;

/**
 * Load Node's type stripper (amaro, a WebAssembly module) before the job arrives. Node loads it on
 * the first `.ts` import whose compile-cache entry misses, and every job's workflow file misses:
 * the cache is keyed by path and each job's tree is in a new directory. That load was most of
 * the agent's `firstStep` phase (runner handed the job → first step running, 231–262 ms at p50
 * under load); in a spare runner it now happens while the runner waits for its job.
 */
export function warmTypeStripper(): void {
  // Its "experimental feature" warning (emitted once per process) would land in the first job's
  // log as stderr; the same stripper runs for the workflow import either way.
  const emitWarning = process.emitWarning;
  process.emitWarning = () => undefined;
  try {
    stripTypeScriptTypes(TYPESCRIPT_SAMPLE);
  } catch {
    // No stripper in this Node (types are then stripped by whatever loads .ts files): nothing to warm.
  } finally {
    process.emitWarning = emitWarning;
  }
}

/**
 * Messages handed to the transport and not yet written, above which commands' output waits
 * (LogSink.ready), and below which it flows again. A step can print far faster than the agent
 * reads: without a bound the runner queued a million lines in memory and the job's result sat
 * behind them.
 */
const BACKLOG_HIGH = 2_000;
const BACKLOG_LOW = 500;
/** After the result is handed over: exit once this long passes with nothing written. */
const EXIT_STALL_MS = 5_000;

export function startRunner(transport: RunnerTransport): (message: unknown) => void {
  let unwritten = 0;
  let lastWritten = Date.now();
  let flowing: PromiseWithResolvers<void> | undefined;
  function send(message: RunnerToAgent, done?: () => void): void {
    unwritten++;
    const written = (): void => {
      unwritten--;
      lastWritten = Date.now();
      if (flowing !== undefined && unwritten <= BACKLOG_LOW) {
        flowing.resolve();
        flowing = undefined;
      }
      done?.();
    };
    try {
      transport.send(message, written);
    } catch {
      // The channel is gone: the agent stopped listening; nothing to report to.
      written();
    }
  }
  /** Undefined while the agent keeps up; otherwise resolves once the backlog is down again. */
  function ready(): Promise<void> | undefined {
    if (unwritten < BACKLOG_HIGH) return undefined;
    flowing ??= Promise.withResolvers<void>();
    return flowing.promise;
  }

  let execution: Execution | undefined;
  let finished = false;
  /** The result went out: only the exit is left. */
  let reported = false;
  let cancelledEarly: string | undefined;
  const forced = Promise.withResolvers<void>();

  const sink = new LogSink((message) => send(message), ready);
  const output = captureProcessOutput(sink);

  function failedResult(reason: string, status: ResultMessage['status'] = 'failed'): ResultMessage {
    return { type: 'runner.result', status, reason: reason.slice(0, 10_000), outputs: {}, steps: [] };
  }

  async function finish(result: ResultMessage): Promise<void> {
    if (finished) return;
    finished = true;
    sink.flush();
    // Commands left running (background processes of any step or hook) end with the job.
    for (const activity of allActivities()) activity.killNow();
    const tempRoot = execution?.runtime.tempRoot;
    if (tempRoot !== undefined) await rm(tempRoot, { recursive: true, force: true }).catch(() => {});
    channel.close('the job ended');
    // The result goes after every log line still queued (the channel keeps order); the process
    // ends when it is written, or once the agent has read nothing for EXIT_STALL_MS.
    lastWritten = Date.now();
    setInterval(() => {
      if (Date.now() - lastWritten > EXIT_STALL_MS) process.exit(0);
    }, 1_000).unref();
    send(result, () => {
      reported = true;
      output.restore();
      process.exit(0);
    });
  }

  /** The job, a scheduling pseudo-job (role), or a generated job (its generator re-evaluated). */
  async function prepare(start: RunnerStart): Promise<Execution> {
    if (start.role === undefined && start.generator === undefined) {
      const loaded = await loadJob(start);
      return new RunnerJob({ start, workflow: loaded.workflow, job: loaded.job, channel, sink });
    }
    const workflow = await loadWorkflow(start);
    if (start.role === 'filter') return new FilterExecution(start, workflow, channel, sink);
    if (start.role === 'hooks') return new HooksExecution(start, workflow, channel, sink);
    if (start.role === 'generate') return new GenerateExecution(start, workflow, channel, sink);
    const scratch = newRuntime(start, channel, sink);
    try {
      const job = await findGeneratedJob(workflow, start, scratch);
      return new RunnerJob({ start, workflow, job, channel, sink });
    } finally {
      if (scratch.tempRoot !== undefined) await rm(scratch.tempRoot, { recursive: true, force: true }).catch(() => {});
    }
  }

  async function runStart(start: RunnerStart): Promise<void> {
    try {
      process.chdir(start.workspace);
    } catch (error) {
      await finish(failedResult(`cannot enter workspace ${start.workspace}: ${messageOf(error)}`));
      return;
    }
    // Workflow code sees the job environment only; secrets reach it through ctx.secrets.get.
    const path = process.env['PATH'];
    for (const key of Object.keys(process.env)) delete process.env[key];
    Object.assign(process.env, start.env);
    if (process.env['PATH'] === undefined && path !== undefined) process.env['PATH'] = path;

    let job: Execution;
    try {
      job = await prepare(start);
    } catch (error) {
      await finish(failedResult(messageOf(error)));
      return;
    }
    if (cancelledEarly !== undefined) {
      await finish(failedResult(cancelledEarly, 'cancelled'));
      return;
    }
    execution = job;
    const result = await Promise.race([job.run(), forced.promise.then(() => job.forcedResult())]);
    await finish(result);
  }

  const channel = new RunnerChannel(send, {
    start: (start) => {
      runStart(start).catch((error: unknown) => finish(failedResult(`step runner failed: ${messageOf(error)}`)));
    },
    badStart: (reason) => void finish(failedResult(reason)),
    cancel: (reason, force) => {
      if (execution === undefined) {
        cancelledEarly ??= reason.trim() === '' ? 'cancelled' : reason;
        return;
      }
      execution.cancel(reason, force);
      if (force) forced.resolve();
    },
    complaint: (text) => sink.line('(runner)', 'system', text),
  });

  // No agent to report to: stop the job's commands and leave (saying why, for the runner's stderr).
  transport.onDisconnect((reason) => {
    for (const activity of allActivities()) activity.killNow();
    output.stderr(`svc step runner: ${reason}; stopping the job\n`);
    process.exit(1);
  });
  process.on('SIGTERM', () => {
    if (execution === undefined) void finish(failedResult('runner received SIGTERM', 'cancelled'));
    else {
      execution.cancel('runner received SIGTERM', true);
      forced.resolve();
    }
  });

  // Errors that escape workflow code fail the step or hook running now, never the runner.
  const escaped = (kind: string) => (error: unknown) => {
    // Thrown by an exit hook of something the job loaded (a failed write on the read-only
    // sandbox, say), after the result went out: nothing is left to report it to, and swallowing
    // it here would abort the exit and keep the job's sandbox alive until the stall fallback.
    if (reported) {
      process.stderr.write(`svc step runner: ${kind} while exiting: ${messageOf(error)}\n`);
      process.exit(0);
    }
    const wrapped = new Error(`${kind}: ${messageOf(error)}`, { cause: error });
    const activity = currentActivity();
    if (activity?.escape(wrapped) === true) return;
    sink.line(activity?.label ?? '(runner)', 'stderr', wrapped.message);
  };
  process.on('uncaughtException', escaped('uncaught exception'));
  process.on('unhandledRejection', escaped('unhandled rejection'));
  return (message) => channel.receive(message);
}
