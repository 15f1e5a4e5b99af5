// The step runner: a child process the agent forks (inside the job's sandbox) with an IPC
// channel (Node's own, or the unix socket named by SVC_RUNNER_IPC_SOCKET: transport.ts). It
// listens at once, loads the runner and the SDK, says `runner.ready`, waits for `runner.start`
// (one that came during the load is kept), loads the workflow module, runs the one job, reports steps, log lines, secrets to mask and API calls over IPC,
// sends `runner.result` and exits 0. The exit code is not the job's status; the result message
// is. A runner that exits without a result crashed (the agent reports that). Load
// failures (bad start message, missing file, unknown job) are a failed runner.result.
//
// Cancel: `runner.cancel {force:false}` aborts the running step (ctx.signal; its commands get
// SIGTERM to their process group, SIGKILL 2 s later) and runs the cancel hooks;
// `{force:true}` SIGKILLs every command group, stops waiting for hooks and sends the result at
// once. The job's grace period before SIGKILL of this whole process is the agent's to enforce.
//
// This file stays tiny: it listens before the rest (typebox's compiler, execa, the SDK) loads,
// which is most of the startup time; `runner.ready` comes after that load, so the agent's
// `runnerReady` phase is the wait for it (zero for a warm spare that finished loading). Node's compile cache is on: in the directory the
// agent names in NODE_COMPILE_CACHE (under its work dir, kept between jobs; Node enables it
// before this file runs), else Node's default. In the compiled tree the vendored bundles
// (dist/vendor, bin/vendor-hooks.ts) replace typebox's and execa's hundreds of small modules.
// The agent may start this process before a job exists (a warm spare, docs/agent.md): it loads
// everything up to the SDK and then waits for `runner.start`.
//
// `main.ts --warm` (no IPC): load what a job loads, write the compile cache, exit 0. The agent
// runs it once at start, outside any sandbox, so runners confined read-only still find a warm cache.
import { enableCompileCache, flushCompileCache } from 'node:module';
import { openRunnerTransport } from './transport.ts';

const warm = process.argv[2] === '--warm';
const transport = warm ? undefined : openRunnerTransport();
if (!warm && transport === undefined) {
  process.stderr.write('svc step runner: start me with an IPC channel (child_process.fork, or SVC_RUNNER_IPC_SOCKET); I am run by the agent\n');
  process.exit(2);
}

enableCompileCache();
const early: unknown[] = [];
let deliver: (message: unknown) => void = (message) => early.push(message);
transport?.onMessage((message) => deliver(message));

try {
  const compiled = !import.meta.url.endsWith('.ts');
  if (compiled) {
    const hooks = (await import(new URL('../../bin/vendor-hooks.js', import.meta.url).href)) as { useVendorBundles(binUrl: string): boolean };
    hooks.useVendorBundles(new URL('../../bin/svc-agent.js', import.meta.url).href);
  }
  const { startRunner, preloadSdk, warmTypeStripper } = await import('./runner.ts');
  // The SDK every workflow imports: loaded now, while the agent is still preparing the tree.
  await preloadSdk();
  if (warm) {
    flushCompileCache();
    process.exit(0);
  }
  // And the type stripper the workflow's import needs (runner.ts says why).
  warmTypeStripper();
  deliver = startRunner(transport!);
  transport!.send({ type: 'runner.ready', pid: process.pid });
  for (const message of early.splice(0)) deliver(message);
} catch (error) {
  // A broken install: report it as the job's result rather than dying silently.
  const reason = `the step runner could not load: ${error instanceof Error ? error.message : String(error)}`.slice(0, 10_000);
  if (warm) {
    process.stderr.write(`${reason}\n`);
    process.exit(1);
  }
  transport!.send({ type: 'runner.result', status: 'failed', reason, outputs: {}, steps: [] }, () => process.exit(0));
}
