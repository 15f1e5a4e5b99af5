// The step runner: a child process the agent forks (inside the job's sandbox) with an IPC
// channel. It says `runner.ready` once listening, waits for `runner.start`, loads the workflow module, runs the one job, reports
// steps, log lines, secrets to mask and API calls over IPC, sends `runner.result` and exits 0.
// The exit code is not the job's status; the result message is. A runner that exits without a
// result crashed (the agent reports that). Workflow code never runs in the agent itself.
//
// Cancel: `runner.cancel {force:false}` aborts the running step (ctx.signal; its commands get
// SIGTERM to their process group, SIGKILL 2 s later) and runs the cancel hooks;
// `{force:true}` SIGKILLs every command group, stops waiting for hooks and sends the result at
// once. The job's grace period before SIGKILL of this whole process is the agent's to enforce.
import { rm } from 'node:fs/promises';
import { messageOf } from '../../kernel/services/errors.ts';
import type { RunnerStart, RunnerToAgent } from '../../schemas/wire/runner.ts';
import { allActivities, currentActivity } from './activity.ts';
import { RunnerChannel } from './ipc.ts';
import { JobExecution, type ResultMessage } from './job.ts';
import { loadJob } from './load-workflow.ts';
import { captureProcessOutput, LogSink } from './log-capture.ts';

if (typeof process.send !== 'function') {
  process.stderr.write('svc step runner: start me with an IPC channel (child_process.fork); I am run by the agent\n');
  process.exit(2);
}

function send(message: RunnerToAgent, done?: () => void): void {
  try {
    process.send!(message, undefined, undefined, done === undefined ? undefined : () => done());
  } catch {
    // The channel is gone: the agent stopped listening; nothing to report to.
    done?.();
  }
}

let execution: JobExecution | undefined;
let finished = false;
let cancelledEarly: string | undefined;
const forced = Promise.withResolvers<void>();

const sink = new LogSink((message) => send(message));
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
  setTimeout(() => process.exit(0), 5_000).unref();
  send(result, () => {
    output.restore();
    process.exit(0);
  });
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

  let loaded;
  try {
    loaded = await loadJob(start);
  } catch (error) {
    await finish(failedResult(messageOf(error)));
    return;
  }
  if (cancelledEarly !== undefined) {
    await finish(failedResult(cancelledEarly, 'cancelled'));
    return;
  }
  const job = new JobExecution({ start, workflow: loaded.workflow, job: loaded.job, channel, sink });
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

process.on('message', (message) => channel.receive(message));
// Up and listening: the agent sends runner.start when it sees this. Load failures come later as
// a failed runner.result.
send({ type: 'runner.ready', pid: process.pid });
// No agent to report to: stop the job's commands and leave.
process.on('disconnect', () => {
  for (const activity of allActivities()) activity.killNow();
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
  const wrapped = new Error(`${kind}: ${messageOf(error)}`, { cause: error });
  const activity = currentActivity();
  if (activity?.escape(wrapped) === true) return;
  sink.line(activity?.label ?? '(runner)', 'stderr', wrapped.message);
};
process.on('uncaughtException', escaped('uncaught exception'));
process.on('unhandledRejection', escaped('unhandled rejection'));
