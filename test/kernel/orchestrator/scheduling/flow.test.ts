// Scheduling across a run's jobs against the real orchestrator (dispatch + scheduling
// subsystems, real PostgreSQL) with a TestAgent scripting the agent's reports: workflow filter,
// workflow hooks on success/failure/cancel, outputs to dependents (matrix too), run timeout,
// dynamic jobs and matrices, bad generated jobs.
import t from 'tap';
import { createContext } from '../../../../kernel/orchestrator/secrets/store.ts';
import { cancelRunIn } from '../../../../kernel/orchestrator/dispatch/cancel.ts';
import { sweepRunDeadlines } from '../../../../kernel/orchestrator/scheduling/index.ts';
import type { JobDispatch } from '../../../../schemas/wire/agent.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { until } from '../../../fixtures/runs.ts';
import { byName, createTestRun, jobsOf, lockJob, lockWorkflow, runEvents, runOf, scriptedAgent, startSchedulingNode } from './harness.ts';

type Script = (d: JobDispatch) => Record<string, unknown> | null;
const ok = (extra: Record<string, unknown> = {}) => ({ status: 'completed', ...extra });
const TERMINAL = ['completed', 'failed', 'cancelled', 'skipped'];

t.test('scheduling flows', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startSchedulingNode(t, db.url, 100);
    const scripts = new Map<string, Script>();
    const dispatches: JobDispatch[] = [];
    const agent = await scriptedAgent(t, node.url, 'sched-agent', (d) => {
      if (!dispatches.some((x) => x.jobId === d.jobId && x.attempt === d.attempt)) dispatches.push(d);
      return scripts.get(d.runId)?.(d) ?? null;
    });
    const finished = (runId: string, ms = 15_000) =>
      until(`run ${runId} finished`, async () => {
        const run = await runOf(db.pool, runId);
        return TERMINAL.includes(run.status) ? run : undefined;
      }, ms);
    const dispatchesOf = (runId: string) => dispatches.filter((d) => d.runId === runId);

    await t.test('filter false: every job and the hooks skipped, the run skipped', async (t) => {
      const wf = lockWorkflow([lockJob('build'), lockJob('test', { needs: ['build'] })], { hasFilter: true, hasOnSuccess: true });
      const created = await createTestRun(db.pool, wf);
      const before = byName(await jobsOf(db.pool, created.runId));
      t.same(Object.keys(before).sort(), ['build', 'test', 'workflow filter', 'workflow hooks']);
      // A connected agent may already have claimed it: what matters is that it goes first.
      t.ok(['queued', 'dispatched', 'running'].includes(before['workflow filter']!.status), 'the filter is queued first');
      t.equal(before['build']!.status, 'waiting', 'the jobs wait for the filter');
      t.same(before['build']!.needs, ['svc:filter'], 'every job waits for the filter');
      t.same(before['workflow hooks']!.needs.sort(), ['build', 'svc:filter', 'test']);
      scripts.set(created.runId, (d) => ok({ skipped: true, reason: 'skipped: workflow filter returned false' }));
      const run = await finished(created.runId);
      t.equal(run.status, 'skipped');
      t.equal(run.reason, 'workflow filter returned false');
      const jobs = byName(await jobsOf(db.pool, created.runId));
      for (const name of ['build', 'test', 'workflow hooks', 'workflow filter']) {
        t.equal(jobs[name]!.status, 'skipped', `${name} skipped`);
        t.equal(jobs[name]!.reason, 'workflow filter returned false');
      }
      const sent = dispatchesOf(created.runId);
      t.equal(sent.length, 1, 'only the filter was dispatched');
      t.equal(sent[0]!.jobConfig.role, 'filter');
      t.equal(sent[0]!.jobConfig.job, 'svc:filter');
      const events = await runEvents(db.pool, created.runId);
      t.ok(events.some((e) => e.kind === 'workflow_complete' && e.status === 'skipped'), 'workflow_complete skipped recorded');
    });

    await t.test('filter true: jobs run; outputs reach dependents (matrix keyed); hooks run last with the failure', async (t) => {
      const wf = lockWorkflow(
        [lockJob('build', { hasOutputs: true }), lockJob('lint', { matrix: { type: 'static', axes: { os: ['linux', 'mac'] }, size: 2 } }), lockJob('test', { needs: ['build', 'lint'] })],
        { hasFilter: true, hasOnFailure: true, hasCleanup: true },
      );
      const created = await createTestRun(db.pool, wf);
      scripts.set(created.runId, (d) => {
        switch (d.jobConfig.job) {
          case 'svc:filter':
            return ok();
          case 'build':
            return ok({ outputs: { version: '1.2' } });
          case 'lint':
            return ok({ outputs: { os: d.jobConfig.matrix?.['os'] } });
          case 'test':
            return { status: 'failed', reason: 'step "t" failed: boom', steps: [{ name: 't', status: 'failed', reason: 'boom' }] };
          default:
            return ok();
        }
      });
      const run = await finished(created.runId);
      t.equal(run.status, 'failed');
      t.equal(run.reason, 'job failed: test');
      const sent = dispatchesOf(created.runId);
      const order = sent.map((d) => d.jobConfig.job);
      t.equal(order[0], 'svc:filter', 'the filter first');
      t.same(order.slice(1, 4).sort(), ['build', 'lint', 'lint']);
      t.same(order.slice(4), ['test', 'svc:hooks'], 'the hooks last');
      const test = sent.find((d) => d.jobConfig.job === 'test')!;
      t.same(test.jobConfig.needs, { build: { version: '1.2' }, lint: { 'os=linux': { os: 'linux' }, 'os=mac': { os: 'mac' } } }, 'outputs by job; matrix instances keyed by axis=value');
      t.equal(sent.find((d) => d.jobConfig.job === 'build')!.jobConfig.role, undefined, 'ordinary jobs carry no role');
      const hooks = sent.find((d) => d.jobConfig.job === 'svc:hooks')!;
      t.equal(hooks.jobConfig.role, 'hooks');
      t.match(hooks.jobConfig.workflowOutcome, { status: 'failed', failedJob: 'test', failedStep: 't', reason: 'job test failed: step "t" failed: boom' });
      t.same(hooks.jobConfig.needs['build'], { version: '1.2' }, 'the hooks see every job output');
      const jobs = byName(await jobsOf(db.pool, created.runId));
      t.equal(jobs['workflow hooks']!.status, 'completed');
      t.equal(jobs['workflow filter']!.status, 'completed');
    });

    await t.test('hooks succeed on success; a failing hook fails the run with a compound reason', async (t) => {
      const good = await createTestRun(db.pool, lockWorkflow([lockJob('only')], { hasOnSuccess: true }));
      scripts.set(good.runId, () => ok());
      t.equal((await finished(good.runId)).status, 'completed');
      const hooks = dispatchesOf(good.runId).find((d) => d.jobConfig.role === 'hooks')!;
      t.equal(hooks.jobConfig.workflowOutcome?.status, 'success');
      t.equal(dispatchesOf(good.runId).filter((d) => d.jobConfig.role === 'hooks').length, 1, 'hooks run once');

      const bad = await createTestRun(db.pool, lockWorkflow([lockJob('only')], { hasOnSuccess: true }));
      scripts.set(bad.runId, (d) => (d.jobConfig.role === 'hooks' ? { status: 'failed', reason: 'workflow onSuccess hook failed: boom' } : ok()));
      const run = await finished(bad.runId);
      t.equal(run.status, 'failed');
      t.equal(run.reason, 'workflow onSuccess hook failed: boom');
    });

    await t.test('cancel: running jobs get job.cancel, the hooks still run onCancel; force cancels the hooks too', async (t) => {
      const wf = lockWorkflow([lockJob('build')], { hasOnCancel: true, hasCleanup: true });
      const created = await createTestRun(db.pool, wf);
      scripts.set(created.runId, (d) => (d.jobConfig.role === 'hooks' ? ok() : null));
      const build = await until('build dispatched', () => dispatchesOf(created.runId).find((d) => d.jobConfig.job === 'build'));
      agent.jobStatus(build.jobId, 'running');
      await until('build running', async () => (byName(await jobsOf(db.pool, created.runId))['build']!.status === 'running' ? true : undefined));
      const result = await cancelRunIn(db.pool, created.runId, 'alice');
      t.equal(result.cancelledJobs, 1, 'the hooks job is not cancelled');
      const cancel = await agent.waitFor('job.cancel', (m) => m.jobId === build.jobId);
      t.equal(cancel.force, false);
      t.equal(byName(await jobsOf(db.pool, created.runId))['workflow hooks']!.status, 'waiting');
      agent.jobStatus(build.jobId, 'cancelled', { reason: 'cancelled: Cancelled by alice' });
      const run = await finished(created.runId);
      t.equal(run.status, 'cancelled');
      const hooks = dispatchesOf(created.runId).find((d) => d.jobConfig.role === 'hooks')!;
      t.match(hooks.jobConfig.workflowOutcome, { status: 'cancelled', reason: 'Cancelled by alice' });

      const forced = await createTestRun(db.pool, wf);
      scripts.set(forced.runId, () => null);
      const b2 = await until('build dispatched', () => dispatchesOf(forced.runId).find((d) => d.jobConfig.job === 'build'));
      await cancelRunIn(db.pool, forced.runId, 'bob', { force: true });
      t.equal(byName(await jobsOf(db.pool, forced.runId))['workflow hooks']!.status, 'cancelled', 'force cancels the hooks job');
      t.equal((await agent.waitFor('job.cancel', (m) => m.jobId === b2.jobId)).force, true);
      agent.jobStatus(b2.jobId, 'cancelled');
      t.equal((await finished(forced.runId)).status, 'cancelled');
      t.notOk(dispatchesOf(forced.runId).some((d) => d.jobConfig.role === 'hooks'), 'no hooks after a force cancel');

      // No job ever dispatched: the run ends cancelled at once, hooks included.
      const idle = await createTestRun(db.pool, lockWorkflow([lockJob('far', { runsOn: ['nowhere'] })], { hasCleanup: true }));
      await cancelRunIn(db.pool, idle.runId, 'carol');
      t.equal((await runOf(db.pool, idle.runId)).status, 'cancelled');
      t.same((await jobsOf(db.pool, idle.runId)).map((j) => j.status), ['cancelled', 'cancelled']);
    });

    await t.test('run timeout: the sweeper cancels past the deadline with the reason', async (t) => {
      // An hour's timeout, its deadline moved back once the build runs (not a race with the dispatch).
      const wf = lockWorkflow([lockJob('build'), lockJob('far', { runsOn: ['nowhere'] })], { timeout: 3_600_000 });
      const before = Date.now();
      const created = await createTestRun(db.pool, wf);
      const after = Date.now();
      const row = await runOf(db.pool, created.runId);
      t.ok(row.deadline_at !== null && row.deadline_at >= before + 3_600_000 && row.deadline_at <= after + 3_600_000, 'deadline set at creation: creation time + timeout');
      scripts.set(created.runId, () => null);
      const build = await until('build dispatched', () => dispatchesOf(created.runId).find((d) => d.jobConfig.job === 'build'));
      await db.pool.query(sql.unsafe`UPDATE runs SET deadline_at = now() - interval '1 second' WHERE id = ${created.runId}`);
      const cancel = await agent.waitFor('job.cancel', (m) => m.jobId === build.jobId);
      t.equal(cancel.reason, 'run timed out after 3600000 ms');
      const jobs = byName(await jobsOf(db.pool, created.runId));
      t.equal(jobs['far']!.status, 'cancelled');
      t.equal(jobs['far']!.reason, 'run timed out after 3600000 ms');
      agent.jobStatus(build.jobId, 'cancelled', { reason: 'cancelled: run timed out after 3600000 ms' });
      const run = await finished(created.runId);
      t.equal(run.status, 'cancelled');
      t.equal(run.reason, 'run timed out after 3600000 ms');
      t.equal(run.cancelled_by, 'svc:timeout');
      t.same(await sweepRunDeadlines(db.pool), [], 'a finished run is not swept again');
    });

    await t.test('dynamic jobs: the generator runs, its jobs run, outputs reach a job needing the entry', async (t) => {
      const wf = lockWorkflow([
        lockJob('setup'),
        lockJob('gen', { needs: ['setup'], dynamic: true, generatorRef: 'jobs.gen.generate', steps: [] }),
        lockJob('report', { needs: ['gen'] }),
      ]);
      const created = await createTestRun(db.pool, wf);
      t.same((await jobsOf(db.pool, created.runId)).map((j) => j.name).sort(), ['report', 'setup', 'svc:generate:gen'], 'a generator job in place of the dynamic entry');
      scripts.set(created.runId, (d) => {
        if (d.jobConfig.job === 'setup') return ok({ outputs: { n: 2 } });
        if (d.jobConfig.role === 'generate') {
          return ok({
            generated: {
              jobs: [
                { name: 'g1', entry: lockJob('g1') },
                { name: 'g2', entry: lockJob('g2', { needs: ['g1', 'setup'], matrix: { type: 'static', axes: { v: [1, 2] }, size: 2 } }) },
              ],
            },
          });
        }
        if (d.jobConfig.job === 'g1') return ok({ outputs: { x: 1 } });
        if (d.jobConfig.job === 'g2') return ok({ outputs: { v: d.jobConfig.matrix?.['v'] } });
        return ok();
      });
      const run = await finished(created.runId);
      t.equal(run.status, 'completed', run.reason ?? '');
      const sent = dispatchesOf(created.runId);
      t.same(sent.map((d) => d.jobConfig.job), ['setup', 'svc:generate:gen', 'g1', 'g2', 'g2', 'report']);
      const gen = sent[1]!;
      t.same(gen.jobConfig.generator, { entry: 'gen', ref: 'jobs.gen.generate', kind: 'jobs', needs: { setup: { n: 2 } } });
      t.same(sent[2]!.jobConfig.generator, gen.jobConfig.generator, 'a generated job names its generator (the runner re-evaluates it)');
      t.same(sent[3]!.jobConfig.needs, { g1: { x: 1 }, setup: { n: 2 } });
      t.same(sent[5]!.jobConfig.needs, { gen: { g1: { x: 1 }, 'g2:v=1': { v: 1 }, 'g2:v=2': { v: 2 } } }, 'a dynamic entry stands for its generated jobs');
      const rows = await jobsOf(db.pool, created.runId);
      t.same(rows.filter((r) => r.generated_by === 'gen').map((r) => r.display_name).sort(), ['g1', 'g2 (1)', 'g2 (2)']);
    });

    await t.test('bad generated jobs fail on the run; what needs them is skipped; the rest runs', async (t) => {
      // The workflow's declared context must exist and admit the run: dispatch checks it.
      await createContext(db.pool, { name: 'deploy', repositories: ['acme/*'], minTrust: 'any' });
      const wf = lockWorkflow([lockJob('gen', { dynamic: true, generatorRef: 'jobs.gen.generate', steps: [] }), lockJob('report', { needs: ['gen'] })], { contexts: ['deploy'] });
      const created = await createTestRun(db.pool, wf);
      scripts.set(created.runId, (d) => {
        if (d.jobConfig.role !== 'generate') return ok();
        return ok({
          generated: {
            jobs: [
              { name: 'good', entry: lockJob('good') },
              { name: 'bad', entry: lockJob('bad', { needs: ['nope'] }) },
              { name: 'worse', entry: { name: 'worse' } },
              { name: 'secretive', entry: lockJob('secretive', { contexts: ['prod'] }) },
              { name: 'err', error: 'at jobs.err.options.runsOn: must name at least one label' },
              { name: 'after', entry: lockJob('after', { needs: ['bad'] }) },
              { name: 'loop1', entry: lockJob('loop1', { needs: ['loop2'] }) },
              { name: 'loop2', entry: lockJob('loop2', { needs: ['loop1'] }) },
              { name: 'self', entry: lockJob('self', { needs: ['gen'] }) },
            ],
          },
        });
      });
      const run = await finished(created.runId);
      t.equal(run.status, 'failed');
      const jobs = byName(await jobsOf(db.pool, created.runId));
      t.equal(jobs['good']!.status, 'completed', 'the valid generated job ran');
      t.equal(jobs['bad']!.status, 'failed');
      t.match(jobs['bad']!.reason, 'generated job "bad" (from gen) cannot run: it needs "nope", which is not a job of this run');
      t.match(jobs['worse']!.reason, 'its definition is not a valid lock job entry');
      t.match(jobs['secretive']!.reason, 'it uses secret context "prod", which the workflow does not declare');
      t.match(jobs['err']!.reason, 'must name at least one label');
      t.match(jobs['loop1']!.reason, 'needs form a cycle');
      t.match(jobs['self']!.reason, 'its own generator');
      t.equal(jobs['after']!.status, 'skipped');
      t.equal(jobs['after']!.reason, 'needs bad which failed');
      t.equal(jobs['report']!.status, 'skipped');
      t.match(jobs['report']!.reason, /^needs gen which failed/);
      t.match(run.reason, 'job');
    });

    await t.test('a generated name clashing with a run job fails the generator; nothing is inserted', async (t) => {
      const wf = lockWorkflow([lockJob('build'), lockJob('gen', { dynamic: true, generatorRef: 'jobs.gen.generate', steps: [] }), lockJob('report', { needs: ['gen'] })]);
      const created = await createTestRun(db.pool, wf);
      scripts.set(created.runId, (d) =>
        d.jobConfig.role === 'generate' ? ok({ generated: { jobs: [{ name: 'fresh', entry: lockJob('fresh') }, { name: 'BUILD', entry: lockJob('BUILD') }] } }) : ok(),
      );
      const run = await finished(created.runId);
      t.equal(run.status, 'failed');
      const jobs = byName(await jobsOf(db.pool, created.runId));
      t.equal(jobs['generate gen']!.status, 'failed');
      t.match(jobs['generate gen']!.reason, 'generator gen produced job "BUILD", but "build" is already a job of this run');
      t.notOk(jobs['fresh'], 'nothing generated was inserted');
      t.equal(jobs['report']!.status, 'skipped');

      const none = await createTestRun(db.pool, wf);
      scripts.set(none.runId, () => ok());
      await finished(none.runId);
      t.match(byName(await jobsOf(db.pool, none.runId))['generate gen']!.reason, 'generator gen reported no generated jobs');
    });

    await t.test('dynamic matrix: evaluated by a generator job, expanded into instances; a bad matrix fails it', async (t) => {
      const wf = lockWorkflow([lockJob('m', { matrix: { type: 'dynamic', ref: 'jobs.m.matrix' } }), lockJob('after', { needs: ['m'] })]);
      const created = await createTestRun(db.pool, wf);
      scripts.set(created.runId, (d) => {
        if (d.jobConfig.role === 'generate') return ok({ generated: { matrix: { node: [20, 22] } } });
        if (d.jobConfig.job === 'm') return ok({ outputs: { node: d.jobConfig.matrix?.['node'] } });
        return ok();
      });
      t.equal((await finished(created.runId)).status, 'completed');
      const sent = dispatchesOf(created.runId);
      t.same(sent[0]!.jobConfig.generator, { entry: 'm', ref: 'jobs.m.matrix', kind: 'matrix', needs: {} });
      t.same(sent.filter((d) => d.jobConfig.job === 'm').map((d) => d.jobConfig.matrix).sort((a, b) => Number(a?.['node']) - Number(b?.['node'])), [{ node: 20 }, { node: 22 }]);
      t.same(sent.find((d) => d.jobConfig.job === 'after')!.jobConfig.needs, { m: { 'node=20': { node: 20 }, 'node=22': { node: 22 } } });

      const bad = await createTestRun(db.pool, wf);
      scripts.set(bad.runId, (d) => (d.jobConfig.role === 'generate' ? ok({ generated: { matrix: { node: [] } } }) : ok()));
      t.equal((await finished(bad.runId)).status, 'failed');
      const jobs = byName(await jobsOf(db.pool, bad.runId));
      t.equal(jobs['generate m']!.reason, 'dynamic matrix of m: matrix axis node must be a non-empty array');
      t.equal(jobs['after']!.status, 'skipped');
    });
  });
});
