// A real orchestrator (startOrchestrator, built-in plugins, filesystem storage) with the
// dispatch, caches, ingest and events subsystems, plus helpers that speak the cache messages the way
// the agent does: request, PUT to the pre-signed URL, complete.
import { createHash, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminAuthSubsystem } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator, type Orchestrator } from '../../../../kernel/orchestrator/app.ts';
import { createCachesSubsystem, userCacheOptionsOf, type UserCacheOptions } from '../../../../kernel/orchestrator/caches/index.ts';
import { createDispatchSubsystem } from '../../../../kernel/orchestrator/dispatch/index.ts';
import { eventsSubsystem } from '../../../../kernel/orchestrator/events/index.ts';
import { ingestSubsystem } from '../../../../kernel/orchestrator/ingest/subsystem.ts';
import type { StorageExtensionPoint } from '../../../../core/extension-points/storage.ts';
import { sql, type DatabasePool } from '../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../plugins/builtin.ts';
import { testLogger, type Test } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';
import type { TestAgent } from '../../../fixtures/test-agent.ts';

export interface CacheNode {
  orch: Orchestrator;
  url: string;
  storage: StorageExtensionPoint;
  options: UserCacheOptions;
}

export async function startCacheNode(t: Test, dbUrl: string, env: Record<string, string> = {}): Promise<CacheNode> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-caches-'));
  const orch = await startOrchestrator({
    env: {
      SVC_DATABASE_URL: dbUrl,
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_DATA_DIR: dataDir,
      SVC_SECRET_KEY: 'a'.repeat(64),
      SVC_AGENT_AUTH: 'none',
      SVC_STORAGE_TYPE: 'filesystem',
      ...env,
    },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    // The events subsystem's delivery loop creates runs with the ingest pipeline's cache check.
    subsystems: [adminAuthSubsystem, createDispatchSubsystem({ tickMs: 150, heartbeatMs: 1_000, registerTimeoutMs: 3_000 }), createCachesSubsystem({ sweepMs: 0 }), ingestSubsystem, eventsSubsystem],
  });
  t.teardown(async () => {
    await orch.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return { orch, url: orch.url, storage: orch.ctx.host.select('storage', 'filesystem'), options: userCacheOptionsOf(orch.ctx) };
}

export const sha256 = (body: Buffer | string): string => createHash('sha256').update(body).digest('hex');

export async function put(url: string, body: Buffer | string): Promise<void> {
  const res = await fetch(url, { method: 'PUT', body });
  if (!res.ok) throw new Error(`PUT ${url} → ${res.status} ${await res.text()}`);
}

export async function fetchText(url: string): Promise<string> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url} → ${res.status}`);
  return res.text();
}

/** The first protocol.error with `code` (optionally for `requestId`). */
export async function protocolError(agent: TestAgent, code: string, requestId?: string) {
  return agent.waitFor('protocol.error', (m) => m.error.code === code && (requestId === undefined || m.requestId === requestId));
}

export async function restore(agent: TestAgent, jobId: string, key: string, restoreKeys?: string[]) {
  const requestId = randomUUID();
  agent.sendRaw({ type: 'cache.user.restore.request', jobId, requestId, key, ...(restoreKeys ? { restoreKeys } : {}) });
  return agent.waitFor('cache.user.restore.response', (m) => m.requestId === requestId);
}

export async function entryCount(pool: DatabasePool, where = sql.fragment`true`): Promise<number> {
  return Number(await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM user_cache_entries WHERE ${where}`));
}

/**
 * Saves like the agent: save.request → PUT → save.complete. Resolves 'skip', 'committed' (the
 * entry row appeared) or the protocol.error code the complete was refused with.
 */
export async function save(pool: DatabasePool, agent: TestAgent, jobId: string, key: string, body: Buffer | string, overrides: { sizeBytes?: number } = {}): Promise<string> {
  const requestId = randomUUID();
  agent.sendRaw({ type: 'cache.user.save.request', jobId, requestId, key });
  const response = await agent.waitFor('cache.user.save.response', (m) => m.requestId === requestId);
  if (response.error) return response.error.code;
  if (response.skip) return 'skip';
  await put(response.uploadUrl as string, body);
  const sizeBytes = overrides.sizeBytes ?? Buffer.byteLength(body);
  agent.sendRaw({ type: 'cache.user.save.complete', jobId, requestId, key, tarHash: sha256(body), sizeBytes });
  return until(`save of ${key} to settle`, async () => {
    const refused = agent.received.find((m) => m.type === 'protocol.error' && m.requestId === requestId);
    if (refused?.type === 'protocol.error') return refused.error.code;
    // Committed: the upload row is gone and the entry holds this body (a refusal also removes
    // the upload row, so its protocol.error is waited for instead).
    const pending = await pool.exists(sql.unsafe`SELECT 1 FROM user_cache_uploads WHERE request_id = ${requestId}`);
    if (pending) return undefined;
    const stored = await pool.exists(sql.unsafe`SELECT 1 FROM user_cache_entries WHERE key = ${key} AND tar_hash = ${sha256(body)}`);
    return stored ? 'committed' : undefined;
  });
}
