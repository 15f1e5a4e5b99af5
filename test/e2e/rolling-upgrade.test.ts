// A rolling upgrade of a two-node cluster while signed webhooks keep arriving (issue 40,
// docs/upgrades.md "Upgrading a cluster"), with REAL processes on one PostgreSQL:
//
// 1. The starting commit (2ca6415) is checked out in a temporary worktree and built with its own
//    build steps (test/fixtures/upgrade/old-tree.ts). ITS jobs-stack fixture starts ITS relay,
//    two ITS orchestrator nodes (one join token, fixed ports) and ITS agent; workflows are
//    compiled and pushed with ITS svc.
// 2. A sender delivers signed push webhooks (the current post-receive hook code: payload, HMAC,
//    headers), one new branch each, steadily through everything below.
// 3. node-1 is stopped (SIGTERM) and replaced by the CURRENT build on the same port, which
//    migrates the database while node-2 (old) keeps working; then node-2 is replaced the same way;
//    then the relay (in place, same port and database), then the agent. In each phase (old+old,
//    mixed, new+new, new relay, new agent) a probe push runs a job to green, and admin calls with
//    the bootstrap token are answered by every live node.
//
// Counted: every delivery answered 2xx while the relay ran (the mixed cluster refused nothing the
// old one took; a delivery refused while the relay itself restarted is sent again, as the hook's
// outbox does), one run per delivered branch (lost 0, duplicate runs 0), every probe run green.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { deliverWebhook } from '../../cli/git-hook/deliver.ts';
import { readHookConfig } from '../../cli/git-hook/config.ts';
import { hookGit } from '../../cli/git-hook/git.ts';
import { buildPushPayload, ZERO_SHA } from '../../cli/git-hook/push-payload.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { gitEnv } from '../fixtures/git-repos.ts';
import type * as JobsStackModule from '../fixtures/jobs-stack.ts';
import { REPO_ROOT, startProgram, programPath, MIN_PROGRAM_TIMEOUT_MS, type StartedProgram } from '../fixtures/programs.ts';
import { until } from '../fixtures/runs.ts';
import { oldTree } from '../fixtures/upgrade/old-tree.ts';
import { freePort } from './provenance/scenario.ts';

t.setTimeout(1_800_000);

const FROM = '2ca6415';
const JOIN_TOKEN = 'rolling-upgrade-join-token-7c1d2e';
const ADMIN_TOKEN = 'rolling-upgrade-admin-token-0123456789';
/** Bounds the sender: at most this many deliveries, one every SEND_EVERY_MS. */
const MAX_DELIVERIES = 150;
const SEND_EVERY_MS = 250;
/** An environment without the test run's own SVC_ settings (as jobs-stack starts programs). */
const withoutSvc = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv => Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('SVC_')));
/** One probe push per phase: a job run green on the agent. */
const PHASES = ['old', 'mixed', 'new', 'relay', 'agent'];

const PROBE = `import { job, push, workflow } from 'svc/sdk';
export default workflow('probe', {
  on: push({ branches: ['main', 'probe-*'] }),
  jobs: { check: job({ runsOn: 'e2e', steps: (s) => s.step('say', async (ctx) => { console.log('PROBE ' + ctx.event.ref); }) }) },
});
`;
// Runs of the load branches only count deliveries: their job waits for a label nobody serves.
const LOAD = `import { job, push, workflow } from 'svc/sdk';
export default workflow('load', {
  on: push({ branches: ['load-*'] }),
  jobs: { parked: job({ runsOn: 'parked-nobody-serves-this', steps: (s) => s.step('noop', async () => {}) }) },
});
`;

// The current build: the compiled bins (npm run test:full builds dist first).
process.env['SVC_TEST_DIST'] = '1';
const old = await oldTree(t, FROM);
/** Migration files of a tree (or of a build: dist/ holds a copy). */
const sqlFiles = async (root: string) => (await readdir(join(root, 'kernel/orchestrator/migrations'))).filter((f) => f.endsWith('.sql')).length;
const oldStack = (await import(pathToFileURL(join(old.dir, 'test/fixtures/jobs-stack.ts')).href)) as typeof JobsStackModule;

await eachDatabase(t, async (t, db) => {
  const ports = { 'node-1': await freePort(), 'node-2': await freePort(), relay: await freePort() };
  const stack = await oldStack.startJobsStack(t, db, {
    // A fixed port: the relay is replaced in place, and the hook's webhook URL names it.
    relayEnv: { SVC_RELAY_PORT: String(ports.relay) },
    orchestratorEnv: {
      SVC_INSTANCE_ID: 'node-1',
      SVC_SERVER_PORT: String(ports['node-1']),
      SVC_CLUSTER_JOIN_TOKEN: JOIN_TOKEN,
      SVC_CLUSTER_HEARTBEAT_MS: '500',
      SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    },
  });
  const nodes: Record<string, StartedProgram> = { 'node-1': stack.orchestrator, 'node-2': await stack.startOrchestrator({ SVC_INSTANCE_ID: 'node-2', SVC_SERVER_PORT: String(ports['node-2']) }) };
  const versions: Record<string, string> = { 'node-1': FROM, 'node-2': FROM };
  const agentEnv = { SVC_AGENT_MAX_RECONNECT_DELAY_MS: '1000', SVC_AGENT_ID: 'rolling-agent' };
  let agent = await stack.startAgentOn(nodes['node-2']!.url, agentEnv);
  const sha = await stack.pushWorkflow({ '.svc/workflows/probe.ts': PROBE, '.svc/workflows/load.ts': LOAD });
  t.equal((await stack.waitForRun(sha, 300_000)).status, 'completed', 'the old cluster runs the first push green');

  // Branches the sender announces: created in the bare repository without firing its hook.
  const git = hookGit(stack.remote.bare);
  for (let i = 0; i < MAX_DELIVERIES; i++) await git.run(['update-ref', `refs/heads/load-${i}`, sha]);
  for (const phase of PHASES) await git.run(['update-ref', `refs/heads/probe-${phase}`, sha]);
  const hook = await readHookConfig(git);
  const deliver = async (ref: string) => {
    const payload = await buildPushPayload(git, hook, { ref, before: ZERO_SHA, after: sha }, {});
    return deliverWebhook({ url: hook.webhookUrl, secret: hook.secret, sourceId: hook.sourceId, event: 'push', body: Buffer.from(JSON.stringify(payload)), deadline: Date.now() + 30_000 });
  };

  // First answers per delivery, and the deliveries refused at first: kept and sent again before
  // the next one, as the post-receive hook's outbox does (docs/providers.md).
  const answers: Array<{ ref: string; ok: boolean; status: number | null; outcome: string; attempts: number; during: string }> = [];
  const outbox: string[] = [];
  let resent = 0;
  let during = `${versions['node-1']}+${versions['node-2']}`;
  let stopSending = false;
  const flush = async () => {
    while (outbox.length > 0) {
      if (!(await deliver(outbox[0]!)).ok) return false;
      outbox.shift();
      resent += 1;
    }
    return true;
  };
  const sender = (async () => {
    for (let i = 0; i < MAX_DELIVERIES && !stopSending; i++) {
      await flush();
      const sentDuring = during;
      const result = await deliver(`refs/heads/load-${i}`);
      answers.push({ ref: `refs/heads/load-${i}`, ok: result.ok, status: result.status, outcome: result.outcome, attempts: result.attempts, during: sentDuring });
      if (!result.ok) outbox.push(`refs/heads/load-${i}`);
      await new Promise((r) => setTimeout(r, SEND_EVERY_MS));
    }
  })();

  const adminCalls: string[] = [];
  const probe = async (phase: string) => {
    for (const [name, node] of Object.entries(nodes)) {
      const res = await fetch(`${node.url}/api/v1/admin/cluster/nodes`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      adminCalls.push(`${phase} ${name} ${res.status}`);
      t.equal(res.status, 200, `${phase}: ${name} (${versions[name]}) answers an admin call`);
    }
    const result = await deliver(`refs/heads/probe-${phase}`);
    t.ok(result.ok, `${phase}: the probe delivery is accepted (${result.status} ${result.outcome})`);
    const run = await until(`the probe-${phase} run`, async () => {
      const row = (await stack.pool.maybeOne(sql.unsafe`SELECT id::text AS id, status, reason FROM runs WHERE ref = ${`refs/heads/probe-${phase}`} AND status IN ('completed', 'failed', 'cancelled', 'skipped')`)) as Record<string, unknown> | null;
      return row ?? undefined;
    }, 300_000, 250);
    t.equal(run['status'], 'completed', `${phase}: a job ran green on the agent (${String(run['reason'] ?? '')})`);
  };
  const replace = async (name: 'node-1' | 'node-2') => {
    t.equal(await nodes[name]!.stop('SIGTERM'), 0, `${name} (${FROM}) stopped cleanly`);
    const node = await startProgram(programPath(join(REPO_ROOT, 'bin/svc-orchestrator.ts')), 'svc-orchestrator', {
      env: { ...stack.orchEnv, SVC_INSTANCE_ID: name, SVC_SERVER_PORT: String(ports[name]) },
      readyTimeoutMs: MIN_PROGRAM_TIMEOUT_MS,
    });
    t.teardown(() => node.stop('SIGKILL').catch(() => undefined));
    nodes[name] = node;
    versions[name] = 'current';
    during = `${versions['node-1']}+${versions['node-2']}`;
  };

  await probe('old');
  const oldLevel = (await stack.pool.one(sql.unsafe`SELECT count(*)::int AS n FROM svc_migrations`)) as { n: number };
  t.equal(oldLevel.n, await sqlFiles(old.dir), `the old cluster runs ${FROM}'s ${oldLevel.n} migrations`);
  await until('a few deliveries to the old cluster', () => (answers.length >= 5 ? true : undefined), 120_000, 100);
  await replace('node-1');
  await probe('mixed');
  await until('a few deliveries to the mixed cluster', () => (answers.filter((a) => a.during === `current+${FROM}`).length >= 5 ? true : undefined), 120_000, 100);
  await replace('node-2');
  await probe('new');
  await until('a few deliveries to the upgraded cluster', () => (answers.filter((a) => a.during === 'current+current').length >= 5 ? true : undefined), 120_000, 100);

  // The relay last: one process, replaced in place. While it restarts the connection is refused.
  during = 'relay restarting';
  t.equal(await stack.relay.stop('SIGTERM'), 0, `the relay (${FROM}) stopped cleanly`);
  const relay = await startProgram(programPath(join(REPO_ROOT, 'bin/svc-relay.ts')), 'svc-relay', { env: { ...stack.relayEnv }, readyTimeoutMs: MIN_PROGRAM_TIMEOUT_MS });
  t.teardown(() => relay.stop('SIGKILL').catch(() => undefined));
  during = 'relay current';
  await probe('relay');
  await until('a few deliveries to the upgraded relay', () => (answers.filter((a) => a.during === 'relay current').length >= 5 ? true : undefined), 120_000, 100);

  // Agents last: the old agent stops (SIGTERM), the current one takes the next job.
  t.equal(await agent.stop('SIGTERM'), 0, `the agent (${FROM}) stopped cleanly`);
  agent = await startProgram(programPath(join(REPO_ROOT, 'bin/svc-agent.ts')), 'svc-agent', {
    env: { ...withoutSvc(gitEnv()), SVC_ORCHESTRATOR_URL: nodes['node-2']!.url, SVC_AGENT_TOKEN: stack.agentToken, SVC_AGENT_LABELS: 'e2e', SVC_AGENT_SANDBOX: 'process', SVC_AGENT_WORK_DIR: join(stack.root, 'current-agent'), SVC_AGENT_LOG_LEVEL: 'warn', SVC_AGENT_MAX_RECONNECT_DELAY_MS: '1000', SVC_AGENT_ID: 'rolling-agent-current' },
    readyTimeoutMs: MIN_PROGRAM_TIMEOUT_MS,
  });
  t.teardown(() => agent.stop('SIGKILL').catch(() => undefined));
  await probe('agent');
  stopSending = true;
  await sender;
  await until('the refused deliveries sent again', () => flush().then((done) => (done ? true : undefined)), 60_000, 500);

  const refused = answers.filter((a) => !a.ok);
  t.same(refused.filter((a) => a.during !== 'relay restarting'), [], 'while the relay ran, every delivery was answered 2xx: the mixed cluster refused nothing');
  const delivered = answers.map((a) => a.ref);
  const counted = async () =>
    (await stack.pool.any(sql.unsafe`
      SELECT ref, count(*)::int AS runs FROM runs WHERE ref LIKE 'refs/heads/load-%' AND parent_run_id IS NULL GROUP BY ref`)) as unknown as Array<{ ref: string; runs: number }>;
  const runs = await until('a run for every delivery', async () => {
    const rows = await counted();
    return rows.length >= delivered.length ? rows : undefined;
  }, 300_000, 500);
  const byRef = new Map(runs.map((r) => [r.ref, r.runs]));
  const lost = delivered.filter((ref) => !byRef.has(ref));
  const duplicates = runs.filter((r) => r.runs > 1);
  t.same(lost, [], 'lost 0');
  t.same(duplicates, [], 'duplicate runs 0');
  t.equal(runs.length, delivered.length, 'no run for a branch that was not delivered');
  const retried = answers.filter((a) => a.attempts > 1).length;
  const phases = [`${FROM}+${FROM}`, `current+${FROM}`, 'current+current', 'relay restarting', 'relay current'].map((p) => `${p}: ${answers.filter((a) => a.during === p).length}`).join(', ');
  t.comment(`deliveries ${answers.length} (${phases}); accepted at once ${answers.length - refused.length}, refused while the relay restarted ${refused.length} (all sent again: ${resent}), retried by the sender ${retried}; runs ${runs.length}, lost ${lost.length}, duplicate runs ${duplicates.length}; admin calls ${adminCalls.length} all 200; probe runs ${PHASES.length} green`);
  const migrations = (await stack.pool.one(sql.unsafe`SELECT count(*)::int AS n FROM svc_migrations`)) as { n: number };
  t.equal(migrations.n, await sqlFiles(join(REPO_ROOT, 'dist')), `the current nodes applied the current build's migrations (${await sqlFiles(old.dir)} at ${FROM}, ${migrations.n} now)`);
}, { schema: 'empty' }); // the old nodes migrate it: a template would hold the current schema already
