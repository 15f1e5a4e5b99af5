// svc-admin runs logs in-process (runCli) against a real database: every stored line of a run in
// job then chunk order, one job (by display name or id), one step by index and from the end
// (--step=-1 is the last step), lines stored masked stay masked, --json; unknown run, job and
// step, and --step on a run with several jobs without --job, exit 1 with their codes.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { migrate, sql, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { insertRun } from '../../fixtures/runs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });

type Line = { step: string; text: string; stream?: string };
async function addSteps(pool: DatabasePool, jobId: string, names: string[]): Promise<void> {
  for (const [index, name] of names.entries()) {
    await pool.query(sql.unsafe`INSERT INTO job_steps (job_id, index, name, status) VALUES (${jobId}, ${index}, ${name}, 'completed')`);
  }
}
async function addChunk(pool: DatabasePool, jobId: string, seq: number, lines: Line[]): Promise<void> {
  const stored = lines.map((l) => ({ at: '2026-01-01T00:00:00.000Z', step: l.step, stream: l.stream ?? 'stdout', text: l.text }));
  await pool.query(sql.unsafe`INSERT INTO job_logs (job_id, seq, lines) VALUES (${jobId}, ${seq}, ${sql.jsonb(stored as never)})`);
}

t.test('runs logs', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const run = (...args: string[]) => runCli(BIN, ['runs', 'logs', ...args], { env: env({ SVC_DATABASE_URL: db.url }) });
    const two = await insertRun(db.pool, { jobs: [{ name: 'build' }, { name: 'test', needs: ['build'] }] });
    const single = await insertRun(db.pool, { jobs: [{ name: 'deploy' }] });
    const build = two.jobs['build']!.id;
    const test = two.jobs['test']!.id;
    const deploy = single.jobs['deploy']!.id;
    await addSteps(db.pool, build, ['checkout', 'compile']);
    await addChunk(db.pool, build, 0, [{ step: '(setup)', text: 'setting up' }, { step: 'checkout', text: 'cloned' }]);
    await addChunk(db.pool, build, 1, [{ step: 'compile', text: 'token is ***' }, { step: 'compile', text: 'compile failed', stream: 'stderr' }]);
    await addSteps(db.pool, test, ['unit']);
    await addChunk(db.pool, test, 0, [{ step: 'unit', text: 'ran 3 tests' }]);
    await addSteps(db.pool, deploy, ['plan', 'apply', 'verify']);
    await addChunk(db.pool, deploy, 0, [{ step: 'plan', text: 'plan ok' }, { step: 'apply', text: 'applied' }]);
    await addChunk(db.pool, deploy, 1, [{ step: 'verify', text: 'verified 1' }]);
    await addChunk(db.pool, deploy, 2, [{ step: 'verify', text: 'verified 2' }]);

    await t.test('the whole run: jobs in order, chunks in order, headings per job and step', async (t) => {
      const all = await run(two.runId);
      t.equal(all.code, 0, all.stderr);
      t.equal(all.stdout, [
        '== build / (setup)', 'setting up', '== build / checkout', 'cloned', '== build / compile', 'token is ***', 'compile failed',
        '== test / unit', 'ran 3 tests', '',
      ].join('\n'));
    });

    await t.test('--step=-1 on a one-job run is its last step; positive and other negative indexes', async (t) => {
      const last = await run(single.runId, '--step=-1');
      t.equal(last.code, 0, last.stderr);
      t.equal(last.stdout, '== deploy / verify\nverified 1\nverified 2\n');
      const first = await run(single.runId, '--step', '0');
      t.equal(first.stdout, '== deploy / plan\nplan ok\n');
      const middle = await run(single.runId, '--step=-2', '--json');
      t.equal(middle.code, 0, middle.stderr);
      const body = JSON.parse(middle.stdout) as { runId: string; job: { id: string; displayName: string }; step: { index: number; name: string }; lines: Array<{ jobId: string; step: string; text: string; seq: number }> };
      t.equal(body.runId, single.runId);
      t.match(body.job, { id: deploy, displayName: 'deploy' });
      t.match(body.step, { index: 1, name: 'apply', status: 'completed' });
      t.same(body.lines.map((l) => [l.jobId, l.step, l.text, l.seq]), [[deploy, 'apply', 'applied', 0]]);
    });

    await t.test('--job by display name or id; masked text stays masked', async (t) => {
      const byName = await run(two.runId, '--job', 'build', '--step=-1');
      t.equal(byName.code, 0, byName.stderr);
      t.equal(byName.stdout, '== build / compile\ntoken is ***\ncompile failed\n');
      const byId = await run(two.runId, '--job', test, '--json');
      t.same((JSON.parse(byId.stdout) as { lines: Array<{ text: string }> }).lines.map((l) => l.text), ['ran 3 tests']);
    });

    await t.test('refusals: unknown run, job, step; --step on several jobs without --job', async (t) => {
      const noRun = await run(randomUUID());
      t.equal(noRun.code, 1);
      t.match(noRun.stderr, /^SVC_ERR_RUN_NOT_FOUND: no run .*svc-admin runs list/);
      const badId = await run('not-a-uuid');
      t.equal(badId.code, 1);
      t.match(badId.stderr, /SVC_ERR_RUN_NOT_FOUND/);
      const noJob = await run(two.runId, '--job', 'lint');
      t.equal(noJob.code, 1);
      t.match(noJob.stderr, /^SVC_ERR_RUNS_JOB_NOT_FOUND: run .* has no job "lint"; its jobs: build, test/);
      const noStep = await run(single.runId, '--step', '3');
      t.equal(noStep.code, 1);
      t.match(noStep.stderr, /^SVC_ERR_RUNS_STEP_NOT_FOUND: job deploy has no step 3: its steps are 0\.\.2 \(or -1\.\.-3 from the end\)/);
      const tooFar = await run(single.runId, '--step=-4');
      t.equal(tooFar.code, 1);
      t.match(tooFar.stderr, /SVC_ERR_RUNS_STEP_NOT_FOUND: job deploy has no step -4/);
      const which = await run(two.runId, '--step=-1', '--json');
      t.equal(which.code, 1);
      t.match(which.stderr, /^SVC_ERR_RUNS_JOB_REQUIRED: run .* has 2 jobs: name one with --job \(build, test\)/);
      t.match(JSON.parse(which.stdout), { error: { code: 'SVC_ERR_RUNS_JOB_REQUIRED' } });
    });

    await t.test('a run with no stored lines says so on stderr and exits 0', async (t) => {
      const quiet = await insertRun(db.pool, { jobs: [{ name: 'idle' }] });
      const empty = await run(quiet.runId);
      t.equal(empty.code, 0, empty.stderr);
      t.equal(empty.stdout, '');
      t.match(empty.stderr, /no log lines stored for run .* \(run status queued\)/);
    });
  });
});
