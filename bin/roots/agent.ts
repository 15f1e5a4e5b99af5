// Composition root of `svc-agent`: its own environment (agent/env.ts), the sandbox plugins, the
// connection. Prints `svc-agent ready <orchestrator url>` once registered; exits non-zero at
// once (no retry) when the orchestrator refuses the token or speaks another protocol version;
// an ephemeral agent exits 0 after its one job; SIGTERM/SIGINT hand back in-flight work.
import { startAgent } from '../../agent/agent.ts';
import { parseAgentEnv, resolveAgentId } from '../../agent/env.ts';
import { createPluginHost } from '../../core/plugins/index.ts';
import type { SandboxExtensionPoint } from '../../core/extension-points/sandbox.ts';
import { oneLineError } from '../../core/lifecycle.ts';
import { createLogger } from '../../core/logging.ts';
import { startTracing } from '../../core/tracing/index.ts';
import { agentPlugins } from '../../plugins/sandboxes/index.ts';

export interface AgentProgramIo {
  env?: Readonly<Record<string, string | undefined>>;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** Overrides the step runner entry (tests). */
  runnerPath?: string;
}

export async function main(_argv: string[] = [], io: AgentProgramIo = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  // Handlers first: a SIGTERM right after the ready line must still stop cleanly.
  const signalled = new Promise<string>((resolve) => {
    const onSignal = (signal: NodeJS.Signals) => {
      process.once(signal, () => {
        stderr.write(`svc-agent: second ${signal}, exiting without a clean stop\n`);
        process.exit(1);
      });
      resolve(signal);
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  let agent;
  let host;
  let logger: ReturnType<typeof createLogger> | undefined;
  try {
    const settings = parseAgentEnv(io.env ?? process.env);
    logger = createLogger({ level: settings.logLevel, name: 'svc-agent' });
    const selection = agentPlugins(settings);
    host = createPluginHost({ config: selection.config, logger });
    await host.signInAll({ builtIns: selection.builtIns });
    const sandboxes = new Map<string, SandboxExtensionPoint>(host.list().filter((p) => p.kind === 'sandbox').map((p) => [p.id, host!.get('sandbox', p.id)]));
    const agentId = await resolveAgentId(settings);
    // OTEL_* (docs/tracing.md): off unless an OTLP endpoint is named; the SDK loads only then.
    const tracing = await startTracing(io.env ?? process.env, 'svc-agent');
    const starting = startAgent({ settings, agentId, logger, sandboxes, tracing, ...(io.runnerPath ? { runnerPath: io.runnerPath } : {}) });
    // The orchestrator may be down for a long time; a signal meanwhile ends the wait.
    const first = await Promise.race([starting, signalled.then(() => null)]);
    if (first === null) {
      stderr.write('svc-agent: stopped before it could register\n');
      process.exit(0);
    }
    agent = first;
    stdout.write(`svc-agent ready ${settings.orchestratorUrl}\n`);
  } catch (error) {
    await host?.close().catch(() => undefined);
    stderr.write(`svc-agent: ${oneLineError(error)}\n`);
    return 1;
  }
  const running = agent;
  const outcome = await Promise.race([running.ended.then((end) => ({ end })), signalled.then(() => ({ end: undefined }))]);
  let code = 0;
  if (outcome.end === undefined) {
    // Logged like the other servers' stop (core/lifecycle.ts): why and when the agent ended.
    const signal = await signalled;
    const began = Date.now();
    logger?.info({ signal }, 'stopping');
    await running.stop();
    logger?.info({ signal, ms: Date.now() - began }, 'stopped');
  } else {
    code = outcome.end.code;
    if (outcome.end.error !== undefined) stderr.write(`svc-agent: ${oneLineError(outcome.end.error)}\n`);
  }
  await host.close().catch(() => undefined);
  return code;
}
