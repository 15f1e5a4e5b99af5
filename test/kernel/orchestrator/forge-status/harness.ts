// A real orchestrator (dispatch + forge-status subsystems, the built-in plugins) on port 0 against
// a test database, with small forge-status retry settings, and the sources the tests report to.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminAuthSubsystem } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { createForgeStatusSubsystem } from '../../../../kernel/orchestrator/forge-status/index.ts';
import { createSource } from '../../../../kernel/orchestrator/sources/store.ts';
import type { DatabasePool } from '../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import type { ForgeStatusDelivery, ForgeStatusDeliveryDetail } from '../../../../schemas/http/forge-status.ts';
import { testLogger, type Test } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';
import { FAST } from '../dispatch/harness.ts';

export const MASTER_KEY_HEX = 'a'.repeat(64);
export const MASTER_KEY = Buffer.from(MASTER_KEY_HEX, 'hex');
export const ADMIN_TOKEN = 'forge-status-admin-token-0123';
/** Small retry settings: three attempts, a few hundred milliseconds apart. */
export const RETRY_ENV = {
  SVC_FORGE_STATUS_MAX_ATTEMPTS: '3',
  SVC_FORGE_STATUS_RETRY_BASE_MS: '100',
  SVC_FORGE_STATUS_RETRY_MAX_MS: '400',
  SVC_FORGE_STATUS_TICK_MS: '250',
  SVC_FORGE_STATUS_REQUEST_TIMEOUT_MS: '3000',
};

export async function startNode(t: Test, dbUrl: string, env: Record<string, string> = {}): Promise<Orchestrator> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-forge-status-'));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: MASTER_KEY_HEX,
      SVC_AGENT_AUTH: 'none',
      SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
      SVC_FORGE_STATUS_RUN_URL_TEMPLATE: 'https://ci.example.test/orgs/{orgId}/runs/{runId}',
      ...RETRY_ENV,
      ...env,
    },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    subsystems: [adminAuthSubsystem, createDispatchSubsystem(FAST), createForgeStatusSubsystem()],
  });
  let stopped = false;
  t.teardown(async () => {
    if (stopped) return;
    stopped = true;
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return orch;
}

export async function gitSource(pool: DatabasePool, orgId = 'org-1'): Promise<string> {
  const created = await createSource(pool, MASTER_KEY, { orgId, providerKind: 'git', settings: { remoteUrl: '/srv/none.git', repository: 'acme/widgets' } });
  return created.source.id;
}

/** GET an admin route of `orch` with the admin bearer. */
export async function admin<T>(orch: Orchestrator, path: string): Promise<{ status: number; body: T }> {
  const response = await fetch(`${orch.url}${path}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return { status: response.status, body: (await response.json()) as T };
}

export async function deliveriesOf(orch: Orchestrator, runId: string): Promise<ForgeStatusDelivery[]> {
  const answer = await admin<{ deliveries: ForgeStatusDelivery[] }>(orch, `/api/v1/admin/forge-status?run=${runId}`);
  if (answer.status !== 200) throw new Error(`forge-status route answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body.deliveries;
}

export async function deliveryDetail(orch: Orchestrator, id: string): Promise<ForgeStatusDeliveryDetail> {
  const answer = await admin<ForgeStatusDeliveryDetail>(orch, `/api/v1/admin/forge-status/${id}`);
  if (answer.status !== 200) throw new Error(`forge-status route answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Waits (generously) until no delivery of the run is pending any more; returns them. */
export async function settled(orch: Orchestrator, runId: string, count: number, timeoutMs = 60_000): Promise<ForgeStatusDelivery[]> {
  return until(
    `forge status deliveries of run ${runId} settled`,
    async () => {
      const all = await deliveriesOf(orch, runId);
      return all.length >= count && all.every((d) => d.status !== 'pending') ? all : undefined;
    },
    timeoutMs,
    100,
  );
}
