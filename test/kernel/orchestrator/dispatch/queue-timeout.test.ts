// Config fields the dispatcher honours (docs/config.md): `queue.timeoutMs` fails a job still
// `queued` past it, with a reason naming the setting and the job's labels; and
// `staleDetector.scanIntervalMs` is the interval of the recovery sweep that fails dead agents'
// jobs. Both are read at use time, so a reload (a swap of the config holder's snapshot, what
// the reloader does) applies them.
import t from 'tap';
import { loadConfig } from '../../../../kernel/services/config/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { insertRun, jobRow, runRow, until } from '../../../fixtures/runs.ts';
import { TestAgent } from '../../../fixtures/test-agent.ts';
import { startNode, type Node } from './harness.ts';

type Pool = Parameters<typeof jobRow>[0];

/** What a reload does: load again with other settings, swap the holder's snapshot. */
async function reload(node: Node, env: Record<string, string>): Promise<void> {
  const holder = node.orch.ctx.configHolder;
  const { config, sources } = await loadConfig({ env: { ...holder.env, ...env }, cwd: holder.cwd });
  holder.swap({ ...holder.snapshot, config, sources });
}

async function recoverySweeps(node: Node): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('svc_orch_recovery_sweeps_total '));
  if (line === undefined) throw new Error('svc_orch_recovery_sweeps_total is not exposed');
  return Number(line.split(' ')[1]);
}

const backdate = (pool: Pool, jobId: string, minutes: number) =>
  pool.query(sql.unsafe`UPDATE jobs SET queued_at = now() - ${minutes} * interval '1 minute' WHERE id = ${jobId}`);

t.test('queue.timeoutMs: a job queued past it fails, naming the setting and its labels', async (t) => {
  await eachDatabase(t, async (t, db) => {
    const node = await startNode(t, db.url, { SVC_QUEUE_TIMEOUT_MS: String(60 * 60_000) });
    const old = await insertRun(db.pool, { jobs: [{ name: 'gpu', runsOn: ['gpu', '!windows'] }] });
    const recent = await insertRun(db.pool, { jobs: [{ name: 'arm', runsOn: ['arm64'] }] });
    const oldJob = old.jobs['gpu']!.id;
    const recentJob = recent.jobs['arm']!.id;
    await backdate(db.pool, oldJob, 120);
    await backdate(db.pool, recentJob, 30);

    const failed = await until('the two-hour-old job failed', async () => {
      const row = await jobRow(db.pool, oldJob);
      return row.status === 'failed' ? row : undefined;
    });
    t.equal(failed.reason, 'Queue timeout: not dispatched within queue.timeoutMs (3600000 ms); no agent took it with the labels gpu, !windows');
    t.equal(failed.agent_id, null, 'never dispatched');
    t.equal((await runRow(db.pool, old.runId)).status, 'failed', 'its run is finished');
    const fact = await db.pool.maybeOne(sql.unsafe`SELECT payload FROM run_events WHERE job_id = ${oldJob} AND kind = 'job_complete'`);
    t.match(fact, { payload: { reason: /^Queue timeout/ } }, 'the terminal fact carries the reason');
    t.equal((await jobRow(db.pool, recentJob)).status, 'queued', 'a job queued 30 minutes ago stays queued under a one-hour limit');

    // A reload lowering the limit applies at the next pass.
    await reload(node, { SVC_QUEUE_TIMEOUT_MS: String(10 * 60_000) });
    const second = await until('the 30-minute-old job failed after the reload', async () => {
      const row = await jobRow(db.pool, recentJob);
      return row.status === 'failed' ? row : undefined;
    });
    t.equal(second.reason, 'Queue timeout: not dispatched within queue.timeoutMs (600000 ms); no agent took it with the labels arm64');

    // A job an agent can take is dispatched, not timed out; the limit counts queued time only.
    const fresh = await insertRun(db.pool, { jobs: [{ name: 'x', runsOn: ['x'] }] });
    const agent = await TestAgent.online({ url: node.url, agentId: 'x-1', labels: ['x'] });
    const dispatch = await agent.waitFor('job.dispatch');
    t.equal(dispatch.jobId, fresh.jobs['x']!.id);
    await backdate(db.pool, fresh.jobs['x']!.id, 120);
    agent.jobStatus(dispatch.jobId, 'running');
    await until('running', async () => ((await jobRow(db.pool, dispatch.jobId)).status === 'running' ? true : undefined));
    agent.jobStatus(dispatch.jobId, 'completed');
    await until('completed', async () => ((await jobRow(db.pool, dispatch.jobId)).status === 'completed' ? true : undefined));
    t.pass('a dispatched job is not touched by the queue timeout');
    await agent.close();
  });
});

t.test('staleDetector.scanIntervalMs is the recovery sweep interval; a reload applies it', async (t) => {
  await eachDatabase(t, async (t, db) => {
    // Recovery window 400 ms; without the setting the sweep runs every 100 ms.
    const node = await startNode(t, db.url, { SVC_AGENT_MAX_RECONNECT_DELAY_MS: '200', SVC_STALE_DETECTOR_SCAN_INTERVAL_MS: String(10 * 60_000) });
    const agent = await TestAgent.online({ url: node.url, agentId: 'gone', labels: ['y'] });
    const { jobs } = await insertRun(db.pool, { jobs: [{ name: 'job', runsOn: ['y'] }] });
    const jobId = jobs['job']!.id;
    await agent.waitFor('job.dispatch');
    await agent.drop();
    await until('recovering', async () => ((await jobRow(db.pool, jobId)).status === 'recovering' ? true : undefined));
    // The window long over (its deadline moved an hour back, not waited for); three dispatcher
    // ticks (150 ms each) later, a sweep every 100 ms (the default here) would have run.
    await db.pool.query(sql.unsafe`UPDATE jobs SET recovery_deadline = now() - interval '1 hour' WHERE id = ${jobId}`);
    const ticks = node.service.ticks;
    await until('three dispatcher ticks', () => (node.service.ticks >= ticks + 3 ? true : undefined), 60_000, 10);
    t.equal(await recoverySweeps(node), 0, 'no recovery sweep ran: the next is ten minutes away');
    t.equal((await jobRow(db.pool, jobId)).status, 'recovering', 'window long expired, but not failed by a sweep');

    await reload(node, { SVC_STALE_DETECTOR_SCAN_INTERVAL_MS: '200' });
    const failed = await until('failed by the sweep', async () => {
      const row = await jobRow(db.pool, jobId);
      return row.status === 'failed' ? row : undefined;
    });
    t.equal(failed.reason, 'Agent gone did not reconnect within the recovery window (0.4s)');
  });
});
