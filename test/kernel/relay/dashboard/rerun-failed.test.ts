// Restart from failed jobs through a real relay to a real orchestrator (startOrchestrator with the
// kernel subsystems, real WebSocket link, real PostgreSQL), from each place a person asks for it:
// the Platform route `?mode=failed`, the dashboard button's route (`…/rerun-failed`, the form the
// run page posts) and `svc runs rerun --failed` (in-process CLI). The new run reuses the completed
// job with its outputs and runs the failed one and its dependent again; bad modes and query
// parameters are refused and create nothing; a run that did not fail cannot be restarted.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../../../kernel/services/db/index.ts';
import { runCli } from '../../../fixtures/cli.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';
import { insertRun, moveStatus } from '../../../fixtures/runs.ts';

interface Row { name: string; status: string; reused_from: string | null; outputs: unknown }

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  const token = await stack.pat('alice');
  const headers = stack.auth(token);
  const base = stack.relayUrl;
  const runCount = async () => (await db.pool.oneFirst(sql.unsafe`select count(*)::int from runs`)) as number;
  const jobsOf = async (runId: string) =>
    Object.fromEntries(((await db.pool.any(sql.unsafe`select name, status, reused_from::text as reused_from, outputs from jobs where run_id = ${runId}`)) as readonly Row[]).map((r) => [r.name, r]));
  // A finished run: a completed with outputs, b failed, c (needs b) skipped.
  const failedRun = async () => {
    const run = await insertRun(db.pool, { orgId: ORG, jobs: [{ name: 'a' }, { name: 'b' }, { name: 'c', needs: ['b'] }] });
    await moveStatus(db.pool, 'jobs', run.jobs['a']!.id, 'completed');
    await db.pool.query(sql.unsafe`update jobs set outputs = ${sql.jsonb({ version: '1.2.3' })} where id = ${run.jobs['a']!.id}`);
    await moveStatus(db.pool, 'jobs', run.jobs['b']!.id, 'failed');
    await moveStatus(db.pool, 'jobs', run.jobs['c']!.id, 'skipped');
    await moveStatus(db.pool, 'runs', run.runId, 'failed');
    return run;
  };
  const post = async (path: string, extra: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { ...headers, ...extra } });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : JSON.parse(text) };
  };

  await t.test('the Platform route ?mode=failed; bad modes and parameters refused', async (t) => {
    const run = await failedRun();
    const before = await runCount();
    for (const query of ['?mode=all', '?mode=failed&x=1', '?failed=true']) {
      const res = await post(`/orgs/${ORG}/runs/${run.runId}/rerun${query}`);
      t.equal(res.status, 400, query);
      t.equal(res.body.error.code, 'SVC_ERR_HTTP_INVALID_QUERY');
    }
    t.equal(await runCount(), before, 'refusals create no run');
    const res = await post(`/orgs/${ORG}/runs/${run.runId}/rerun?mode=failed`);
    t.equal(res.status, 200, JSON.stringify(res.body));
    const jobs = await jobsOf(res.body.newRunId);
    t.match(jobs['a'], { status: 'completed', reused_from: run.jobs['a']!.id, outputs: { version: '1.2.3' } }, 'the completed job is reused with its outputs');
    // Queued, or waiting for the run's build when the stack's source cache is cold.
    t.match(jobs['b'], { status: /^(queued|waiting)$/, reused_from: null }, 'the failed job runs again');
    t.match(jobs['c'], { status: 'waiting', reused_from: null }, 'its dependent waits for it');
    const lineage = await db.pool.one(sql.unsafe`select parent_run_id::text as parent, original_run_id::text as original, triggered_by, rerun_mode from runs where id = ${res.body.newRunId}`);
    t.same(lineage, { parent: run.runId, original: run.runId, triggered_by: 'alice', rerun_mode: 'failed' });
    const again = await post(`/orgs/${ORG}/runs/${run.runId}/rerun?mode=failed`);
    t.equal(again.status, 429, 'the re-run cooldown');
    t.equal(again.body.error.code, 'SVC_ERR_RUNS_RERUN_COOLDOWN');
  });

  await t.test('the dashboard button posts …/rerun-failed', async (t) => {
    const run = await failedRun();
    const page = await fetch(`${base}/ui/orgs/${ORG}/runs/${run.runId}`, { headers });
    const html = await page.text();
    t.equal(page.status, 200);
    t.match(html, `action="/ui/orgs/${ORG}/runs/${run.runId}/rerun-failed"`, 'a failed run offers the button');
    t.match(html, 'Re-run failed jobs');
    const res = await post(`/ui/orgs/${ORG}/runs/${run.runId}/rerun-failed`, { accept: 'application/json' });
    t.equal(res.status, 200, JSON.stringify(res.body));
    t.match(res.body, { ok: true, message: /^Restart from failed jobs started as [0-9a-f-]{36}\.$/ });
    const newRunId = /started as ([0-9a-f-]{36})/.exec(res.body.message)![1]!;
    t.equal((await jobsOf(newRunId))['a']!.reused_from, run.jobs['a']!.id);
    const done = await insertRun(db.pool, { orgId: ORG, jobs: [{ name: 'a' }] });
    await moveStatus(db.pool, 'jobs', done.jobs['a']!.id, 'completed');
    await moveStatus(db.pool, 'runs', done.runId, 'completed');
    const donePage = await (await fetch(`${base}/ui/orgs/${ORG}/runs/${done.runId}`, { headers })).text();
    t.notMatch(donePage, 'rerun-failed', 'a completed run has no such button');
    const refused = await post(`/ui/orgs/${ORG}/runs/${done.runId}/rerun-failed`, { accept: 'application/json' });
    t.equal(refused.status, 409);
    t.match(refused.body, { ok: false, error: { code: 'SVC_ERR_RUNS_RERUN_NOT_FAILED' } });
  });

  await t.test('svc runs rerun --failed', async (t) => {
    const home = await mkdtemp(join(tmpdir(), 'svc-rerun-'));
    t.teardown(() => rm(home, { recursive: true, force: true }));
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
    for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete env[name];
    const svc = (args: string[]) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env });
    t.equal((await svc(['login', '--token', token, '--platform-url', base])).code, 0);
    const run = await failedRun();
    const json = await svc(['runs', 'rerun', run.runId, '--failed', '--json']);
    t.equal(json.code, 0, json.stderr);
    const answer = JSON.parse(json.stdout) as { runId: string; newRunId: string; failedOnly: boolean };
    t.match(answer, { runId: run.runId, failedOnly: true });
    t.equal((await jobsOf(answer.newRunId))['a']!.status, 'completed');
    const cooldown = await svc(['runs', 'rerun', run.runId, '--failed']);
    t.equal(cooldown.code, 1);
    t.match(cooldown.stderr, /SVC_ERR_RUNS_RERUN_COOLDOWN/);
    const bad = await svc(['runs', 'rerun', 'not-a-run']);
    t.not(bad.code, 0, 'a malformed run id is refused before any request');
  });
});
