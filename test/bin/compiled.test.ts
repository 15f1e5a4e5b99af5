// The compiled programs (dist/, with vendored bundles and oclif manifests) work as shipped:
// relay and orchestrator start, an agent registers, the CLIs answer.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { eachDatabase, type Test } from '../fixtures/db.ts';
import { REPO_ROOT, runProgram, startProgram } from '../fixtures/programs.ts';

// Real processes on a 2-core machine shared with other test files: allow for load.

const dist = (name: string) => join(REPO_ROOT, 'dist/bin', `${name}.js`);
const built = existsSync(dist('svc')) && existsSync(join(REPO_ROOT, 'dist/vendor/typebox.js'));
const skip = built ? false : 'needs `npm run build`';

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-dist-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const env = (extra: Record<string, string>): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

t.test('relay, orchestrator and agent start from dist/', { skip }, async (t) => {
  await eachDatabase(t, async (t, db) => {
    const dataDir = await tempDir(t);
    const relay = await startProgram(dist('svc-relay'), 'svc-relay', {
      env: env({ SVC_RELAY_DATABASE_URL: db.url, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_SERVER_LOG_LEVEL: 'warn' }),
    });
    t.teardown(() => relay.stop());
    t.equal((await fetch(`${relay.url}/healthz`)).status, 200, 'relay healthy');

    const orchestrator = await startProgram(dist('svc-orchestrator'), 'svc-orchestrator', {
      env: env({ SVC_DATABASE_URL: db.url, SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, SVC_AGENT_AUTH: 'none', SVC_SERVER_LOG_LEVEL: 'warn' }),
    });
    t.teardown(() => orchestrator.stop());
    const agent = await startProgram(dist('svc-agent'), 'svc-agent', {
      env: env({ SVC_ORCHESTRATOR_URL: orchestrator.url, SVC_AGENT_ID: 'dist-agent', SVC_AGENT_WORK_DIR: join(dataDir, 'agent'), SVC_AGENT_LABELS: 'dist' }),
    });
    t.ok(agent.url, 'agent registered');
    t.equal(await agent.stop(), 0, 'agent stops cleanly');
    t.equal(await orchestrator.stop(), 0, 'orchestrator stops cleanly');
    t.equal(await relay.stop(), 0, 'relay stops cleanly');
  });
});

t.test('compiled CLIs load their command from the manifest', { skip }, async (t) => {
  for (const name of ['svc', 'svc-admin']) {
    t.ok(existsSync(join(REPO_ROOT, 'dist', name === 'svc' ? 'cli' : 'admin-cli', 'oclif.manifest.json')), `${name} manifest built`);
    const r = await runProgram(dist(name), ['--help']);
    t.equal(r.code, 0, `${name} --help`);
  }
  const usage = await runProgram(dist('svc'), ['run', 'local']);
  t.equal(usage.code, 2, 'a retired command is a usage error');
});
