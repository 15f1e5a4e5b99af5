// The `local` scaler end to end with REAL processes (test/fixtures/jobs-stack.ts): svc-relay,
// svc-orchestrator with a scaler config (scaler.configPath) and NO static agent, real
// PostgreSQL, a bare repository with the post-receive hook. A push runs a three-job workflow
// (one job, then two in parallel) on svc-agent processes the orchestrator starts on demand:
// each is ephemeral, takes exactly one job and exits; the processes are gone afterwards. A job
// whose label no scaler serves gets the spec's "No jobs dispatched" outcome.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { startJobsStack } from '../fixtures/jobs-stack.ts';
import { until } from '../fixtures/runs.ts';

t.setTimeout(1_200_000);

const WORKFLOW = `import { job, push, workflow } from 'svc/sdk';

export default workflow('scaled', {
  on: push({ branches: ['main'] }),
  jobs: {
    one: job({ runsOn: 'e2e-scaled', steps: (s) => s.step('hello', async () => { console.log('one ran in ' + process.pid); }) }),
    two: job({ runsOn: 'e2e-scaled', needs: ['one'], steps: (s) => s.step('hello', async () => { console.log('two ran'); }) }),
    three: job({ runsOn: 'e2e-scaled', needs: ['one'], steps: (s) => s.step('hello', async () => { console.log('three ran'); }) }),
  },
});
`;

const UNSERVED = `import { job, push, workflow } from 'svc/sdk';

export default workflow('unserved', {
  on: push({ branches: ['main'] }),
  jobs: {
    nowhere: job({ runsOn: 'gpu-nowhere', steps: (s) => s.step('never', async () => { console.log('must not run'); }) }),
  },
});
`;

/** Processes of this user whose environment names one of our scaled agents (SVC_AGENT_ID=local-…, this orchestrator). */
function scaledAgentProcesses(orchUrl: string): Map<number, string> {
  const found = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
    } catch {
      continue; // gone, or not ours
    }
    const vars = environ.split('\0');
    const id = vars.find((v) => v.startsWith('SVC_AGENT_ID=local-'));
    if (id !== undefined && vars.includes(`SVC_ORCHESTRATOR_URL=${orchUrl}`)) found.set(Number(entry), id.slice('SVC_AGENT_ID='.length));
  }
  return found;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

await eachDatabase(t, async (t, db) => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-e2e-scalers-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const tokenFile = join(dir, 'agent.token');
  const scalerFile = join(dir, 'scalers.yaml');
  await writeFile(
    scalerFile,
    [
      'scalers:',
      '  - name: on-demand',
      '    plugin: local',
      '    labels: [e2e-scaled]',
      '    maxAgents: 3',
      '    startsPerMinute: 30',
      '    idleTimeoutMs: 300000',
      'plugins:',
      '  local:',
      `    agentTokenFile: ${tokenFile}`,
      '    logLevel: info',
      '',
    ].join('\n'),
  );
  const stack = await startJobsStack(t, db, { orchestratorEnv: { SVC_SCALER_CONFIG_PATH: scalerFile } });
  // The token the stack created with `svc-admin agent-token create`; read at each agent start.
  await writeFile(tokenFile, stack.agentToken, { mode: 0o600 });
  const agentsBefore = (await stack.pool.oneFirst(sql.unsafe`select count(*)::int from agents`)) as number;
  t.equal(agentsBefore, 0, 'no static agent');

  // Watch for the agent processes while the run goes on.
  const seen = new Map<number, string>();
  const watcher = setInterval(() => {
    for (const [pid, id] of scaledAgentProcesses(stack.orchUrl)) seen.set(pid, id);
  }, 50);
  t.teardown(() => clearInterval(watcher));

  const sha = await stack.pushWorkflow({ '.svc/workflows/scaled.ts': WORKFLOW, '.svc/workflows/unserved.ts': UNSERVED });
  const runs = await until('both runs of the push', async () => {
    const rows = (await stack.pool.any(sql.unsafe`select r.id::text as id, r.workflow as workflow from runs r where r.sha = ${sha} and r.parent_run_id is null`)) as readonly { id: string; workflow: string }[];
    return rows.length >= 2 ? rows : undefined;
  }, 120_000, 200);
  const scaledRun = runs.find((r) => r.workflow === 'scaled');
  const unservedRun = runs.find((r) => r.workflow === 'unserved');
  t.ok(scaledRun && unservedRun, 'a run per workflow');

  const run = await until('the scaled run to end', async () => {
    const row = (await stack.pool.one(sql.unsafe`select status, reason from runs where id = ${scaledRun!.id}`)) as { status: string; reason: string | null };
    return ['completed', 'failed', 'cancelled'].includes(row.status) ? row : undefined;
  }, 300_000, 200);
  t.equal(run.status, 'completed', `the three-job run completed (${run.reason ?? ''})`);

  // The three jobs, and the build job that caches the workflow's dependencies (it needs an
  // agent too): every one on an agent of its own.
  const jobs = await stack.jobsOf(scaledRun!.id);
  t.same(jobs.filter((j) => j.kind !== 'build').map((j) => j.name).sort(), ['one', 'three', 'two']);
  for (const job of jobs) {
    t.equal(job.status, 'completed', `${job.kind} ${job.name} completed (${job.reason ?? ''})`);
    t.match(job.agent_id, /^local-[0-9a-f]{12}$/, `${job.kind} ${job.name} ran on an agent the local scaler started`);
  }
  const agentIds = jobs.map((j) => j.agent_id as string);
  t.equal(new Set(agentIds).size, jobs.length, `${jobs.length} agents for ${jobs.length} jobs`);

  // Each agent took exactly one job, registered ephemeral with the scaler's label, and exited.
  const perAgent = (await stack.pool.any(sql.unsafe`
    select a.id, a.ephemeral, a.labels, a.connected, (select count(*)::int from jobs j where j.agent_id = a.id) as jobs
    from agents a order by a.id`)) as readonly { id: string; ephemeral: boolean; labels: string[]; connected: boolean; jobs: number }[];
  t.same(perAgent.map((a) => a.id), [...agentIds].sort(), 'the only agents are the scaled ones');
  for (const a of perAgent) {
    t.equal(a.jobs, 1, `agent ${a.id} took exactly one job`);
    t.equal(a.ephemeral, true);
    t.ok(a.labels.includes('e2e-scaled') && a.labels.includes('svc:role:ephemeral'), `agent ${a.id} labels ${a.labels.join(',')}`);
  }
  await until('every scaled agent disconnected', async () => {
    const connected = (await stack.pool.oneFirst(sql.unsafe`select count(*)::int from agents where connected`)) as number;
    return connected === 0 ? true : undefined;
  });
  const scaleUps = await until('the scale-ups recorded as exited', async () => {
    const rows = (await stack.pool.any(sql.unsafe`select scaler, agent_id, state, reason, labels from scale_ups order by created_at`)) as readonly { scaler: string; agent_id: string; state: string; reason: string | null; labels: string[] }[];
    return rows.length === jobs.length && rows.every((r) => r.state === 'exited') ? rows : undefined;
  });
  t.same(scaleUps.map((r) => r.agent_id).sort(), [...agentIds].sort(), 'one scale-up per agent');
  for (const r of scaleUps) {
    t.equal(r.reason, 'ended after its job');
    t.same(r.labels, ['e2e-scaled'], 'mandatoryLabels');
  }

  // The processes: seen while running, gone now.
  clearInterval(watcher);
  t.same(new Set(seen.values()), new Set(agentIds), 'an agent process was seen for each scaled agent');
  await until('the agent processes are gone', async () => ([...seen.keys()].every((pid) => !alive(pid)) ? true : undefined));
  t.same([...scaledAgentProcesses(stack.orchUrl).keys()], [], 'no scaled agent process left');

  // The label no scaler serves: the spec's outcome, nothing started for it. The first job of
  // that run to reach the queue carries it: its build (a build runs where the run's jobs run, so
  // it is that run's own) or, on a source cache hit, the job itself.
  const nowhere = await until('the unserved run marked', async () => {
    const row = (await stack.jobsOf(unservedRun!.id)).find((j) => j.reason?.startsWith('No jobs dispatched'));
    return row;
  }, 120_000, 200);
  t.ok(['nowhere', 'svc:build'].includes(nowhere.name), `marked on ${nowhere.name}`);
  t.equal(nowhere.reason, 'No jobs dispatched: no online or spawnable agent carries the labels gpu-nowhere');
  t.equal(nowhere.status, 'queued');
  t.equal(nowhere.agent_id, null);
  t.equal((await stack.pool.oneFirst(sql.unsafe`select count(*)::int from scale_ups`)) as number, jobs.length, 'no scale-up for the unserved label');
});
