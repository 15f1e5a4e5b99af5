// `svc runs show` and `svc runs logs [--follow]` in-process (runCli) through a real relay to a real
// orchestrator (startOrchestrator with the kernel subsystems, real WebSocket link, real
// PostgreSQL). Runs, steps and log chunks are inserted as the dispatch subsystem would store them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../fixtures/platform-stack.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { insertRun, moveStatus } from '../../fixtures/runs.ts';


const line = (step: string, text: string, stream = 'stdout') => ({ at: new Date().toISOString(), step, stream, text });

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const home = await mkdtemp(join(tmpdir(), 'svc-runs-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const alice = await stack.pat('alice');
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete baseEnv[name];
  const svc = (args: string[], env: Record<string, string> = {}) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...baseEnv, ...env } });

  const login = await svc(['login', '--token', alice, '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);

  const run = await insertRun(db.pool, { orgId: ORG, status: 'running', jobs: [{ name: 'build', status: 'running' }] });
  const buildId = run.jobs['build']!.id;
  await db.pool.query(sql.unsafe`update jobs set agent_id = 'agent-7', started_at = now() where id = ${buildId}`);
  await db.pool.query(sql.unsafe`insert into job_steps (job_id, index, name, status, started_at, finished_at) values
    (${buildId}, 0, 'compile', 'completed', now() - interval '2 seconds', now() - interval '1 second')`);
  await db.pool.query(sql.unsafe`insert into job_logs (job_id, seq, lines) values
    (${buildId}, 0, ${sql.jsonb([line('(setup)', 'restoring source'), line('(setup)', 'npm ci')])}),
    (${buildId}, 1, ${sql.jsonb([line('compile', 'tsc: ok'), line('compile', 'token=***', 'stderr')])})`);

  await t.test('runs show: text and --json', async (t) => {
    const text = await svc(['runs', 'show', run.runId]);
    t.equal(text.code, 0, text.stderr);
    t.match(text.stdout, new RegExp(`run ${run.runId}  running`));
    t.match(text.stdout, /workflow    ci/);
    t.match(text.stdout, /repository  acme\/widgets/);
    t.match(text.stdout, /event       push/);
    t.match(text.stdout, /build  running.*agent agent-7/);
    t.match(text.stdout, /1\. compile  completed/);
    const json = await svc(['runs', 'show', run.runId, '--json']);
    t.equal(json.code, 0, json.stderr);
    const view = JSON.parse(json.stdout);
    t.match(view, { runId: run.runId, status: 'running', workflow: 'ci', sha: 'b'.repeat(40), ref: 'refs/heads/main', eventName: 'push', parentRunId: null });
    t.equal(view.jobs[0].steps[0].name, 'compile');
  });

  await t.test('runs logs: (setup) heading in text, setup:<job> and <job>:<step> keys in JSON, masked text kept', async (t) => {
    const text = await svc(['runs', 'logs', run.runId]);
    t.equal(text.code, 0, text.stderr);
    t.equal(text.stdout, ['== build ==', '(setup)', 'restoring source', 'npm ci', '-- compile --', 'tsc: ok', 'token=***', ''].join('\n'));
    const json = await svc(['runs', 'logs', run.runId, '--json']);
    t.equal(json.code, 0, json.stderr);
    const out = JSON.parse(json.stdout);
    t.equal(out.runId, run.runId);
    t.equal(out.status, 'running');
    t.same(Object.keys(out.logs), ['setup:build', 'build:compile']);
    t.same(out.logs['setup:build'].map((l: { text: string }) => l.text), ['restoring source', 'npm ci']);
    t.match(out.logs['build:compile'][1], { stream: 'stderr', text: 'token=***' });
  });

  await t.test('runs logs --follow prints new lines and ends by itself when the run completes', async (t) => {
    const started = Date.now();
    const following = svc(['runs', 'logs', run.runId, '--follow'], {});
    await new Promise((r) => setTimeout(r, 2_500));
    await db.pool.query(sql.unsafe`insert into job_logs (job_id, seq, lines) values (${buildId}, 2, ${sql.jsonb([line('test', 'all 12 passed')])})`);
    await new Promise((r) => setTimeout(r, 1_500));
    await moveStatus(db.pool, 'jobs', buildId, 'completed');
    await db.pool.query(sql.unsafe`update jobs set finished_at = now() where id = ${buildId}`);
    await moveStatus(db.pool, 'runs', run.runId, 'completed');
    await db.pool.query(sql.unsafe`update runs set finished_at = now() where id = ${run.runId}`);
    const res = await following;
    t.equal(res.code, 0, res.stderr);
    t.match(res.stdout, /restoring source[\s\S]*tsc: ok[\s\S]*-- test --\nall 12 passed\n$/);
    t.ok(Date.now() - started < 120_000, 'stopped on its own after the run ended');
  });

  await t.test('failures exit 1, usage errors exit 2', async (t) => {
    const badId = await svc(['runs', 'show', 'nope']);
    t.equal(badId.code, 2);
    t.equal((await svc(['runs', 'logs', 'nope'])).code, 2);
    t.equal((await svc(['runs', 'logs'])).code, 2, 'missing run id');
    const unknown = await svc(['runs', 'show', '0b7c5b0e-0000-4000-8000-000000000000']);
    t.equal(unknown.code, 1);
    t.match(unknown.stderr, /SVC_ERR_RUNS_NOT_FOUND/);
    const other = await stack.pat('mallory', OTHER_ORG);
    const refused = await svc(['runs', 'logs', run.runId, '--json'], { SVC_TOKEN: other });
    t.equal(refused.code, 1);
    t.match(JSON.parse(refused.stdout), { error: { code: 'SVC_ERR_RELAY_AUTH_WRONG_ORG' } });
    const noLogin = await svc(['runs', 'show', run.runId], { XDG_CONFIG_HOME: join(home, 'empty') });
    t.equal(noLogin.code, 1);
    t.match(noLogin.stderr, /not logged in/);
    const down = await svc(['runs', 'show', run.runId], { SVC_PLATFORM_URL: 'http://127.0.0.1:9' });
    t.equal(down.code, 1);
    t.match(down.stderr, /cannot reach the Platform/);
    const envOnly = await svc(['runs', 'show', run.runId, '--json'], { XDG_CONFIG_HOME: join(home, 'empty'), SVC_PLATFORM_URL: stack.relayUrl, SVC_TOKEN: stack.orgToken, SVC_ORG: ORG });
    t.equal(envOnly.code, 0, 'environment overrides work without a config file (org platform token too)');
  });
});
