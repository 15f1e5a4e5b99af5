// `svc run remote` runs across a master-key rotation (docs/master-key.md, docs/run-remote.md), on
// real PostgreSQL, real filesystem storage and real orchestrators: remote runs are queued through
// the orchestrator's own functions (createUpload hands out the X25519 key derived from the old
// master key, the overlay and secrets are sealed to it, createRemoteRuns stores the runs) while
// the old key is the only key; then the key is rotated (SVC_SECRET_KEY = new, SVC_SECRET_KEY_OLD
// = old) and each run's job is dispatched with an overlay key that opens its overlay and with the
// developer's secrets. A run created just after the rotation from a slot handed out before it is
// accepted too. Once the old key is gone, such a run cannot be opened, and the reason says why.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { openBoxWithKey, sealBox } from '../../../../../core/remote-run-box.ts';
import { adminAuthSubsystem } from '../../../../../kernel/orchestrator/admin-auth/index.ts';
import { startOrchestrator, type Orchestrator } from '../../../../../kernel/orchestrator/app.ts';
import { createDispatchSubsystem } from '../../../../../kernel/orchestrator/dispatch/index.ts';
import { createRemoteRuns, createUpload, overlayKeyOf, remoteDispatchParts, type RemoteRunDeps } from '../../../../../kernel/orchestrator/runs/api/remote.ts';
import { createSource } from '../../../../../kernel/orchestrator/sources/store.ts';
import { loadMasterKeys, type MasterKeys } from '../../../../../kernel/services/crypto/master-keys.ts';
import { parseMasterKey } from '../../../../../kernel/services/crypto/sealing.ts';
import { sql } from '../../../../../kernel/services/db/index.ts';
import { orchestratorPlugins } from '../../../../../plugins/builtin.ts';
import { FilesystemStorage } from '../../../../../plugins/storage/filesystem/index.ts';
import type { StorageExtensionPoint } from '../../../../../core/extension-points/storage.ts';
import type { NormalizedEvent } from '../../../../../schemas/event.ts';
import { eachDatabase, testLogger, type Test, type TestDb } from '../../../../fixtures/db.ts';
import { job, workflow, trig } from '../../../../fixtures/locks.ts';
import { TestAgent } from '../../../../fixtures/test-agent.ts';

const KEY_OLD = 'a'.repeat(64);
const KEY_NEW = 'b'.repeat(64);
const ORG = 'org-rot';
const REPOSITORY = 'acme/widgets';

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

const event: NormalizedEvent = {
  provider: 'git',
  type: 'push',
  providerEvent: 'push',
  action: null,
  eventName: 'push',
  repository: { fullName: REPOSITORY, owner: 'acme', name: 'widgets', id: null, cloneUrl: null, defaultBranch: 'main' },
  ref: 'refs/heads/main',
  branch: 'main',
  tag: null,
  sha: 'c'.repeat(40),
  beforeSha: null,
  deleted: false,
  sender: { login: 'alice', id: null },
  commitMessage: 'wip',
  changedFiles: null,
  pullRequest: null,
  comment: null,
  installationId: null,
  customEventName: null,
};

/** What `svc run remote` does against `keys`: an upload slot, the sealed overlay put there, the run created. */
async function queueRemoteRun(db: TestDb, storage: StorageExtensionPoint, keys: MasterKeys, label: string, withSecrets: boolean) {
  const deps: RemoteRunDeps = {
    pool: db.pool,
    storage: () => storage,
    masterKeys: () => keys,
    checkCaches: async () => ({ sourceHit: null, depsHit: null, buildKey: null }),
    notifyJobsQueued: async () => undefined,
  };
  const slot = await createUpload(deps, ORG);
  const publicKey = Buffer.from(slot.publicKey, 'base64');
  const overlay = sealBox(publicKey, Buffer.from(`overlay of ${label}`));
  await storage.put(overlayKeyOf(ORG, slot.uploadId), overlay);
  const secretsBox = withSecrets ? sealBox(publicKey, Buffer.from(JSON.stringify({ API_TOKEN: 'developer-value' }))).toString('base64') : undefined;
  const created = await createRemoteRuns(deps, ORG, 'alice', {
    uploadId: slot.uploadId,
    fixture: label,
    repository: REPOSITORY,
    sha: 'c'.repeat(40),
    ref: 'refs/heads/main',
    event,
    changedFiles: null,
    workflows: [workflow(`wf-${label}`, [trig.push()], [{ ...job('test'), runsOn: [label] }])],
    lockfileHash: null,
    ...(secretsBox === undefined ? {} : { secretsBox }),
  });
  const runId = created.runs[0]!.runId;
  const jobId = (await db.pool.oneFirst(sql.unsafe`SELECT id::text FROM jobs WHERE run_id = ${runId} AND name = 'test'`)) as string;
  return { overlay, overlayKey: overlayKeyOf(ORG, slot.uploadId), secretsBox: secretsBox ?? null, jobId, slot, publicKey, deps };
}

await eachDatabase(t, async (t, db) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-remote-rotation-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  // The test reads stored objects directly; the nodes' own storage (same root) pre-signs.
  const storage = new FilesystemStorage({ root: join(dataDir, 'storage') });
  const nodeStorage = (node: Orchestrator): StorageExtensionPoint => node.ctx.host.select('storage', 'filesystem');
  await createSource(db.pool, parseMasterKey(KEY_OLD), { orgId: ORG, providerKind: 'git', settings: { repository: REPOSITORY } });
  const oldOnly = await loadMasterKeys({ key: KEY_OLD });
  const rotatedKeys = await loadMasterKeys({ key: KEY_NEW, keyOld: KEY_OLD });

  // Queued while the old key is the only key: no agent carries the labels, so nothing is dispatched.
  const before = await startNode(t, db.url, dataDir, { SVC_SECRET_KEY: KEY_OLD });
  const withSecrets = await queueRemoteRun(db, nodeStorage(before), oldOnly, 'remote-rot-secrets', true);
  const overlayOnly = await queueRemoteRun(db, nodeStorage(before), oldOnly, 'remote-rot-overlay', false);
  // A slot handed out under the old key; its run is created after the rotation.
  const deps = { ...withSecrets.deps, masterKeys: () => oldOnly };
  const slot = await createUpload(deps, ORG);
  await before.stop();

  const lateOverlay = sealBox(Buffer.from(slot.publicKey, 'base64'), Buffer.from('overlay of remote-rot-late'));
  await storage.put(overlayKeyOf(ORG, slot.uploadId), lateOverlay);
  const lateSecrets = sealBox(Buffer.from(slot.publicKey, 'base64'), Buffer.from(JSON.stringify({ API_TOKEN: 'late-value' }))).toString('base64');

  // The rotation: the new key is current, the old one still configured.
  const rotated = await startNode(t, db.url, dataDir, { SVC_SECRET_KEY: KEY_NEW, SVC_SECRET_KEY_OLD: KEY_OLD });
  const late = await createRemoteRuns({ ...deps, storage: () => nodeStorage(rotated), masterKeys: () => rotatedKeys }, ORG, 'alice', {
    uploadId: slot.uploadId,
    fixture: 'late',
    repository: REPOSITORY,
    sha: 'c'.repeat(40),
    ref: 'refs/heads/main',
    event,
    changedFiles: null,
    workflows: [workflow('wf-late', [trig.push()], [{ ...job('test'), runsOn: ['remote-rot-late'] }])],
    lockfileHash: null,
    secretsBox: lateSecrets,
  });
  t.equal(late.runs.length, 1, 'a run from a slot of the old key is accepted after the rotation');
  const lateJob = (await db.pool.oneFirst(sql.unsafe`SELECT id::text FROM jobs WHERE run_id = ${late.runs[0]!.runId} AND name = 'test'`)) as string;

  const cases = [
    ['remote-rot-secrets', withSecrets.jobId, withSecrets.overlay, { API_TOKEN: 'developer-value' }],
    ['remote-rot-overlay', overlayOnly.jobId, overlayOnly.overlay, undefined],
    ['remote-rot-late', lateJob, lateOverlay, { API_TOKEN: 'late-value' }],
  ] as const;
  for (const [label, jobId, overlay, secrets] of cases) {
    const agent = await TestAgent.online({ url: rotated.url, agentId: `agent-${label}-${randomUUID().slice(0, 4)}`, labels: [label] });
    t.teardown(() => agent.close());
    const dispatch = (await agent.waitFor('job.dispatch', (m) => m.jobId === jobId, 300_000)) as { jobConfig: { overlay?: { key: string }; secrets?: Record<string, string> } };
    const key = dispatch.jobConfig.overlay?.key;
    t.ok(key, `${label}: dispatched with an overlay key`);
    t.equal(openBoxWithKey(Buffer.from(key!, 'base64'), overlay).toString(), `overlay of ${label}`, `${label}: the key opens the overlay sealed before the rotation`);
    if (secrets !== undefined) t.same(dispatch.jobConfig.secrets, secrets, `${label}: the developer secrets opened with the old key`);
  }
  await rotated.stop();

  // After the rotation is finished (old key removed), such a run cannot be opened: said by name.
  const columns = { remote_overlay_key: overlayOnly.overlayKey, remote_overlay_epk: overlayOnly.overlay.subarray(5, 37).toString('base64'), remote_contexts: {} };
  const newOnly = await loadMasterKeys({ key: KEY_NEW });
  await t.rejects(remoteDispatchParts({ ...columns, remote_secrets_box: withSecrets.secretsBox }, storage, newOnly), { code: 'SVC_ERR_REMOTE_RUN_UNAVAILABLE', message: /sealed secrets opens with no master key .*SVC_SECRET_KEY_OLD/ });
  const newAndOther = await loadMasterKeys({ key: KEY_NEW, keyOld: 'c'.repeat(64) });
  await t.rejects(remoteDispatchParts({ ...columns, remote_secrets_box: null }, storage, newAndOther), { code: 'SVC_ERR_REMOTE_RUN_UNAVAILABLE', message: /overlay opens with no master key .*tried current and old/ });
  // And a run created now from an old slot is refused at once, not at each job.
  await t.rejects(createRemoteRuns({ ...deps, storage: () => storage, masterKeys: () => newOnly }, ORG, 'alice', { uploadId: slot.uploadId, fixture: 'x', repository: REPOSITORY, sha: 'c'.repeat(40), ref: null, event, changedFiles: null, workflows: [workflow('wf-x', [trig.push()])], lockfileHash: null, secretsBox: lateSecrets }), { code: 'SVC_ERR_REMOTE_RUN_BOX_INVALID' });
});
