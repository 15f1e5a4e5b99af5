// Starts a real orchestrator (startOrchestrator + the dispatch subsystem) on port 0 against a
// test database, with short timings.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOrchestrator, type Orchestrator, type PluginEnvironment, type PluginSelection } from '../../../../kernel/orchestrator/app.ts';
import { createRunControlSubsystem } from '../../../../kernel/orchestrator/run-control/subsystem.ts';
import { createDispatchSubsystem, type DispatchService, type DispatchTuning } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { dispatchServiceRef } from '../../../../kernel/orchestrator/service-refs.ts';
import { testLogger, type Test } from '../../../fixtures/db.ts';
import type { TestAgent } from '../../../fixtures/test-agent.ts';

export interface Node {
  orch: Orchestrator;
  url: string;
  service: DispatchService;
}

export const FAST: DispatchTuning = { tickMs: 150, heartbeatMs: 1_000, registerTimeoutMs: 3_000, containerGraceMs: 60_000 };

export async function startNode(
  t: Test,
  dbUrl: string,
  env: Record<string, string> = {},
  tuning: DispatchTuning = {},
  plugins: (env: PluginEnvironment) => PluginSelection = () => ({ builtIns: [], config: {}, selection: {} }),
): Promise<Node> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-dispatch-'));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: 'a'.repeat(64),
      SVC_AGENT_AUTH: 'none',
      ...env,
    },
    cwd: dataDir,
    logger: testLogger,
    plugins,
    subsystems: [createDispatchSubsystem({ ...FAST, ...tuning }), createRunControlSubsystem()],
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  };
  t.teardown(stop);
  const service = orch.get(dispatchServiceRef);
  return { orch, url: orch.url, service };
}

/**
 * A dispatch pass that began after this call has finished (with the sends it started and any
 * disconnect handling), and whatever it sent has reached `agents`: "nothing was dispatched to
 * them" is then a fact about that pass, not about how long the test waited.
 */
export async function afterDispatchPass(node: Pick<Node, 'service'>, ...agents: TestAgent[]): Promise<void> {
  node.service.dispatcher.wake();
  await node.service.settled();
  for (const agent of agents) await agent.roundTrip();
}
