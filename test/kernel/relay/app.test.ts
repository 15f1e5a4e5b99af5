// With no SVC_RELAY_DATABASE_URL the relay runs on embedded PostgreSQL under <dataDir>/relay
// (database svc_relay), so it can share a data directory with an orchestrator.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { startRelay } from '../../../kernel/relay/index.ts';
import { quietLogger } from './harness.ts';

t.test('embedded database under <dataDir>/relay', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-relay-app-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const relay = await startRelay({ logger: quietLogger, env: { SVC_DATA_DIR: dataDir, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1' } });
  let stopped = false;
  t.teardown(async () => {
    if (!stopped) await relay.stop();
  });
  t.ok((await stat(path.join(dataDir, 'relay', 'postgres', 'PG_VERSION'))).isFile());
  const health = await fetch(`${relay.url}/healthz`);
  t.equal(health.status, 200);
  const res = await fetch(`${relay.url}/webhook/nobody/github`, { method: 'POST', body: '{}' });
  t.equal(res.status, 404);
  await relay.stop();
  stopped = true;
});

t.test('a bad config refuses to start', async (t) => {
  await t.rejects(startRelay({ logger: quietLogger, env: { SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '0' } }), { code: 'SVC_ERR_CONFIG_INVALID' });
});
