// `svc run remote` runs across a master-key rotation (docs/master-key.md), on real PostgreSQL,
// real filesystem storage and real orchestrators: a remote run is queued by a node holding the
// old master key (its overlay and secrets sealed to the X25519 key derived from it), the key is
// rotated (a node with SVC_SECRET_KEY = new, SVC_SECRET_KEY_OLD = old), and the run's job is
// dispatched with an overlay key that opens the overlay and with the developer's secrets. Once
// the old key is gone, the job is not sent and the reason names the missing key.
import { createPublicKey, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openBoxWithKey, rawPublicKey, sealBox } from '../../../../../core/remote-run-box.ts';
import { adminAuthSubsystem } from '../../../../../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator, type Orchestrator } from '../../../../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../../../../kernel/orchestrator/dispatch/index.ts';
import { overlayKeyOf, remoteDispatchParts, remoteRunPrivateKey } from '../../../../../kernel/orchestrator/runs/api/remote.ts';
import { loadMasterKeys } from '../../../../../kernel/services/crypto/master-keys.ts';
import { parseMasterKey } from '../../../../../kernel/services/crypto/sealing.ts';
import { sql } from '../../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../../plugins/builtin.ts';
import { FilesystemStorage } from '../../../../../plugins/storage/filesystem/index.ts';
import { eachDatabase, testLogger, type Test } from '../../../../fixtures/db.ts';
import { insertRun } from '../../../../fixtures/runs.ts';
import { TestAgent } from '../../../../fixtures/test-agent.ts';

const KEY_OLD = 'a'.repeat(64);
const KEY_NEW = 'b'.repeat(64);

async function startNode(t: Test, dbUrl: string, dataDir: string, keys: Record<string, string>): Promise<Orchestrator> {
  const orch = await startOrchestrator({
    env: { SVC_DATABASE_URL: dbUrl, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_AGENT_AUTH: 'none', SVC_STORAGE_TYPE: 'filesystem', ...keys },
    cwd: dataDir,
    logger: testLogger,
    plugins: orchestratorPlugins,
    subsystems: [adminAuthSubsystem, createDispatchSubsystem({ tickMs: 150, heartbeatMs: 1_000, registerTimeoutMs: 3_000 })],
  });
  const stop = orch.stop.bind(orch);
  let stopped = false;
  t.teardown(() => (stopped ? undefined : stop()));
  return Object.assign(orch, {
    stop: async () => {
      stopped = true;
      await stop();
    },
  });
}

/** What `svc run remote` leaves behind: a sealed overlay in storage and a queued run carrying its key material. */
async function queueRemoteRun(t: Test, db: { pool: Parameters<typeof insertRun>[0] }, storage: FilesystemStorage, label: string, withSecrets: boolean) {
  const publicKey = rawPublicKey(createPublicKey(remoteRunPrivateKey(parseMasterKey(KEY_OLD))));
  const overlay = sealBox(publicKey, Buffer.from(`overlay of ${label}`));
  const overlayKey = overlayKeyOf('org-1', randomUUID());
  await storage.put(overlayKey, overlay);
  const secretsBox = withSecrets ? sealBox(publicKey, Buffer.from(JSON.stringify({ API_TOKEN: 'developer-value' }))).toString('base64') : null;
  const run = await insertRun(db.pool, { jobs: [{ name: 'test', runsOn: [label] }] });
  await db.pool.query(sql.unsafe`
    UPDATE runs SET source_origin = 'run-remote', remote_overlay_key = ${overlayKey}, remote_overlay_epk = ${overlay.subarray(5, 37).toString('base64')},
      remote_secrets_box = ${secretsBox}, remote_contexts = '{}'::jsonb WHERE id = ${run.runId}`);
  t.ok(true, `queued remote run ${run.runId} under the old key`);
  return { overlay, overlayKey, secretsBox, jobId: run.jobs['test']!.id };
}

await eachDatabase(t, async (t, db) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-remote-rotation-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const storage = new FilesystemStorage({ root: join(dataDir, 'storage') });

  // Queued while the old key is the only key: no agent carries the label, so nothing is dispatched.
  const before = await startNode(t, db.url, dataDir, { SVC_SECRET_KEY: KEY_OLD });
  const withSecrets = await queueRemoteRun(t, db, storage, 'remote-rot-secrets', true);
  const overlayOnly = await queueRemoteRun(t, db, storage, 'remote-rot-overlay', false);
  await before.stop();

  // The rotation: the new key is current, the old one still configured.
  const rotated = await startNode(t, db.url, dataDir, { SVC_SECRET_KEY: KEY_NEW, SVC_SECRET_KEY_OLD: KEY_OLD });
  for (const [label, queued] of [['remote-rot-secrets', withSecrets], ['remote-rot-overlay', overlayOnly]] as const) {
    const agent = await TestAgent.online({ url: rotated.url, agentId: `agent-${label}`, labels: [label] });
    t.teardown(() => agent.close());
    const dispatch = (await agent.waitFor('job.dispatch', (m) => m.jobId === queued.jobId, 300_000)) as { jobConfig: { overlay?: { key: string }; secrets?: Record<string, string> } };
    const key = dispatch.jobConfig.overlay?.key;
    t.ok(key, `${label}: dispatched with an overlay key`);
    t.equal(openBoxWithKey(Buffer.from(key!, 'base64'), queued.overlay).toString(), `overlay of ${label}`, `${label}: the key opens the overlay sealed before the rotation`);
    if (queued.secretsBox !== null) t.same(dispatch.jobConfig.secrets, { API_TOKEN: 'developer-value' }, 'the developer secrets opened with the old key');
  }
  await rotated.stop();

  // After the rotation is finished (old key removed), such a run cannot be opened: said by name.
  const columns = { remote_overlay_key: overlayOnly.overlayKey, remote_overlay_epk: overlayOnly.overlay.subarray(5, 37).toString('base64'), remote_contexts: {} };
  const newOnly = await loadMasterKeys({ key: KEY_NEW });
  await t.rejects(remoteDispatchParts({ ...columns, remote_secrets_box: withSecrets.secretsBox }, storage, newOnly), { code: 'SVC_ERR_REMOTE_RUN_UNAVAILABLE', message: /sealed secrets opens with no master key .*SVC_SECRET_KEY_OLD/ });
  const newAndOther = await loadMasterKeys({ key: KEY_NEW, keyOld: 'c'.repeat(64) });
  await t.rejects(remoteDispatchParts({ ...columns, remote_secrets_box: null }, storage, newAndOther), { code: 'SVC_ERR_REMOTE_RUN_UNAVAILABLE', message: /overlay opens with no master key .*tried current and old/ });
});
