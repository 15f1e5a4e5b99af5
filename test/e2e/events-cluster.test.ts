// Internal events and schedules end to end on a cluster, with REAL processes: svc-relay, THREE
// svc-orchestrator nodes joined with one join token on one PostgreSQL, one svc-agent, two
// repositories with their own git sources (test/fixtures/jobs-stack.ts).
//
// - A step in acme/app emits `deploy-requested`; the workflow in acme/lib triggered by that
//   event runs exactly once and sees the payload. A `workflowComplete()` follow-up runs once
//   after its upstream and sees its status and duration.
// - An event chain that would recurse forever is stopped by the circuit breaker with a recorded
//   reason (events.maxChainDepth).
// - A schedule fires exactly once per due time across the three nodes, over several due times
//   and a SIGKILL of the leader; counted in the database.
// The cron expression is per minute (the compiler's five fields): the first due time, a minute
// boundary the scheduler computed, is moved a minute back (next_due_at) unless it already fired,
// and the later due times are moved close, so the test waits for no minute; firing is the
// scheduler's own (leader only, claim + event in one transaction). A lease a killed node held
// runs out the same way: moved back in the database, not waited out.
import t from 'tap';
import { sql } from '../../kernel/services/db/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { startJobsStack, type JobsStack } from '../fixtures/jobs-stack.ts';
import { until } from '../fixtures/runs.ts';

// Hang guards only: one agent per half works through five chained runs, slowly on a loaded machine.
t.setTimeout(1_800_000);

const JOIN_TOKEN = 'e2e-cluster-join-token-5f3a9c';
const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

const EMITTER = `import { job, push, workflow } from 'svc/sdk';
export default workflow('emitter', {
  on: push({ branches: ['main'] }),
  jobs: {
    announce: job({
      runsOn: 'e2e',
      steps: (s) => s.step('emit', async (ctx) => {
        const sent = await ctx.emit('deploy-requested', { env: 'staging', sha: ctx.event.sha });
        console.log('EMITTED ' + JSON.stringify(sent));
        await ctx.emit('ping', { hop: 0 });
      }),
    }),
  },
});
`;

const DEPLOYER = `import { event, job, workflow } from 'svc/sdk';
export default workflow('deployer', {
  on: event('deploy-requested'),
  jobs: {
    deploy: job({
      runsOn: 'e2e',
      steps: (s) => s.step('show', async (ctx) => {
        console.log('DEPLOY ' + ctx.event.eventName + ' ' + JSON.stringify(ctx.event.payload));
      }),
    }),
  },
});
`;

const FOLLOWUP = `import { job, workflow, workflowComplete } from 'svc/sdk';
export default workflow('followup', {
  on: workflowComplete({ workflows: ['emitter'] }),
  jobs: {
    report: job({
      runsOn: 'e2e',
      steps: (s) => s.step('report', async (ctx) => {
        const p = ctx.event.payload as { workflow: string; status: string; duration: number };
        console.log('FOLLOWUP ' + p.workflow + ' ' + p.status + ' ' + typeof p.duration);
      }),
    }),
  },
});
`;

// Re-emits what started it: without the breaker this would never end.
const LOOP = `import { event, job, workflow } from 'svc/sdk';
export default workflow('loop', {
  on: event('ping'),
  jobs: {
    again: job({
      runsOn: 'e2e',
      steps: (s) => s.step('again', async (ctx) => {
        const hop = (ctx.event.payload as { hop: number }).hop + 1;
        await ctx.emit('ping', { hop });
      }),
    }),
  },
});
`;

// Its job asks for a label no agent has: the test counts runs, not their jobs.
const NIGHTLY = `import { job, schedule, workflow } from 'svc/sdk';
export default workflow('nightly', {
  on: schedule('* * * * *'),
  jobs: { sweep: job({ runsOn: 'nobody-serves-this', steps: (s) => s.step('sweep', async () => {}) }) },
});
`;

interface RunRow {
  id: string;
  status: string;
  event: { payload?: Record<string, unknown> };
  chain_depth: number;
}

type Row = Record<string, unknown>;
const one = async (stack: JobsStack, query: Parameters<JobsStack['pool']['one']>[0]): Promise<Row> => (await stack.pool.one(query)) as Row;
const maybeOne = async (stack: JobsStack, query: Parameters<JobsStack['pool']['one']>[0]): Promise<Row | null> => (await stack.pool.maybeOne(query)) as Row | null;

async function runsOf(stack: JobsStack, workflow: string): Promise<RunRow[]> {
  return (await stack.pool.any(sql.unsafe`
    SELECT id::text AS id, status, event, chain_depth FROM runs WHERE workflow = ${workflow} ORDER BY created_at`)) as unknown as RunRow[];
}

async function logOf(stack: JobsStack, runId: string): Promise<string> {
  const rows = await stack.pool.any(sql.unsafe`
    SELECT l.lines::text AS lines FROM job_logs l JOIN jobs j ON j.id = l.job_id WHERE j.run_id = ${runId} ORDER BY j.created_at, l.seq`);
  return (rows as Row[]).map((r) => String(r['lines'])).join('\n');
}

/** Nodes marked leader that beat recently (a SIGKILLed leader's row keeps its mark until it goes stale). */
async function leadersOf(stack: JobsStack): Promise<string[]> {
  const rows = await stack.pool.any(sql.unsafe`SELECT node_id FROM cluster_nodes WHERE leader AND stopped_at IS NULL AND last_seen_at > now() - interval '3 seconds' ORDER BY node_id`);
  return (rows as Row[]).map((r) => String(r['node_id']));
}

await eachDatabase(t, async (t, db) => {
  const stack = await startJobsStack(t, db, {
    repositories: ['acme/lib'],
    orchestratorEnv: {
      SVC_INSTANCE_ID: 'node-1',
      SVC_CLUSTER_JOIN_TOKEN: JOIN_TOKEN,
      SVC_CLUSTER_HEARTBEAT_MS: '500',
      SVC_CLUSTER_LEASE_DURATION_MS: '5000',
      SVC_EVENTS_MAX_CHAIN_DEPTH: '3',
      SVC_EVENTS_RETRY_BASE_MS: '100',
      SVC_EVENTS_RETRY_MAX_MS: '800',
      SVC_TEST_CRON_TICK_MS: '300',
      SVC_BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
      // One issuer for the cluster: every node mints with, and serves, the same keys.
      SVC_ORCHESTRATOR_PROVENANCE_ISSUER: 'https://ci.example.test/oidc',
    },
  });
  // node-1 started first: it leads. The agent works through node-3, which the test never kills.
  await until('node-1 to lead', async () => ((await leadersOf(stack)).includes('node-1') ? true : undefined), 30_000, 100);
  const node2 = await stack.startOrchestrator({ SVC_INSTANCE_ID: 'node-2' });
  const node3 = await stack.startOrchestrator({ SVC_INSTANCE_ID: 'node-3' });
  await stack.startAgentOn(node3.url);

  await t.test('three nodes know each other; a node with the wrong join token is refused at start', async (t) => {
    const bad = await stack.admin(['cluster', 'nodes', '--json']);
    t.equal(bad.code, 0, bad.stderr);
    const listed = JSON.parse(bad.stdout) as { nodes: Array<{ nodeId: string; alive: boolean; leader: boolean }> };
    t.same(listed.nodes.filter((n) => n.alive).map((n) => n.nodeId).sort(), ['node-1', 'node-2', 'node-3'], 'svc-admin cluster nodes lists the three live nodes');
    t.same(listed.nodes.filter((n) => n.leader).map((n) => n.nodeId), ['node-1'], 'one leader');
    const viaRoute = await fetch(`${node2.url}/api/v1/admin/cluster/nodes`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    t.equal(viaRoute.status, 200);
    t.same(((await viaRoute.json()) as typeof listed).nodes.filter((n) => n.alive).length, 3, 'the admin route on another node lists the same cluster');
    const jwks = await Promise.all([stack.orchUrl, node2.url, node3.url].map(async (url) => {
      const res = await fetch(`${url}/oidc/.well-known/jwks.json`);
      t.equal(res.status, 200, `${url} serves the JWKS`);
      return JSON.stringify(await res.json());
    }));
    t.ok(jwks[0]!.includes('"kid"'), 'with a key');
    t.same(new Set(jwks).size, 1, 'every node serves the same JWKS');
    await t.rejects(stack.startOrchestrator({ SVC_INSTANCE_ID: 'node-x', SVC_CLUSTER_JOIN_TOKEN: 'not-the-cluster-token-000' }), /SVC_ERR_CLUSTER_JOIN_REFUSED|join/i, 'refused');
  });

  await t.test('an emitted event runs the workflow it triggers once; a completion follow-up runs once', async (t) => {
    const lib = stack.repositories['acme/lib']!;
    await lib.pushWorkflow({ '.svc/workflows/deployer.ts': DEPLOYER, '.svc/workflows/followup.ts': FOLLOWUP, '.svc/workflows/loop.ts': LOOP, '.svc/workflows/nightly.ts': NIGHTLY });
    await until('acme/lib registered', async () => {
      const row = await maybeOne(stack, sql.unsafe`SELECT count(*)::int AS n FROM registrations WHERE repository = 'acme/lib'`);
      return Number(row?.['n'] ?? 0) >= 4 ? true : undefined;
    }, 60_000, 200);
    const sha = await stack.pushWorkflow({ '.svc/workflows/emitter.ts': EMITTER });
    const upstream = await stack.waitForRun(sha, 420_000);
    t.equal(upstream.status, 'completed', upstream.reason ?? '');

    const deployer = await until('the deployer run to end', async () => {
      const runs = await runsOf(stack, 'deployer');
      return runs.length > 0 && ['completed', 'failed'].includes(runs[0]!.status) ? runs : undefined;
    }, 420_000, 250);
    t.equal(deployer[0]!.status, 'completed');
    t.equal(deployer[0]!.chain_depth, 1, 'one hop from the webhook run');
    t.match(await logOf(stack, deployer[0]!.id), /DEPLOY event:deploy-requested \{\\?"env\\?":\\?"staging\\?"/, 'the step saw the event name and payload');

    const followup = await until('the follow-up run to end', async () => {
      const runs = await runsOf(stack, 'followup');
      return runs.length > 0 && ['completed', 'failed'].includes(runs[0]!.status) ? runs : undefined;
    }, 420_000, 250);
    t.equal(followup[0]!.status, 'completed');
    t.match(followup[0]!.event.payload, { workflow: 'emitter', status: 'success', runId: upstream.id });
    t.type(followup[0]!.event.payload?.['duration'], 'number', 'with the upstream duration');
    t.match(await logOf(stack, followup[0]!.id), /FOLLOWUP emitter success number/);

    // Everything delivered; redeliveries (three nodes competing) made no second run.
    await until('every event processed', async () => {
      const row = await one(stack, sql.unsafe`SELECT count(*)::int AS n FROM internal_events WHERE processed_at IS NULL AND name IN ('deploy-requested', 'workflow_complete')`);
      return Number(row['n']) === 0 ? true : undefined;
    }, 60_000, 250);
    t.equal((await runsOf(stack, 'deployer')).length, 1, 'exactly one deployer run');
    t.equal((await runsOf(stack, 'followup')).length, 1, 'exactly one follow-up run');

    // The pushes' delivery records, through the admin route of any node.
    const log = await fetch(`${node2.url}/api/v1/admin/deliveries?org=acme&status=matched`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    t.equal(log.status, 200);
    const listed = ((await log.json()) as { deliveries: Array<{ repository: string | null }> }).deliveries;
    t.ok(listed.some((d) => d.repository === 'acme/app'), 'the event log lists the push that matched');
  });

  await t.test('the circuit breaker stops an event chain that would never end', async (t) => {
    const refusal = await until('a chain-depth refusal', async () => {
      const row = await maybeOne(stack, sql.unsafe`SELECT name, reason, detail, chain_depth FROM internal_event_refusals WHERE name = 'ping' LIMIT 1`);
      return row ?? undefined;
    }, 420_000, 250);
    t.match(refusal, { name: 'ping', reason: 'chain_depth', chain_depth: 4, detail: /circuit breaker.*limit is 3/ });
    await until('the loop runs to end', async () => {
      const runs = await runsOf(stack, 'loop');
      return runs.length > 0 && runs.every((r) => ['completed', 'failed'].includes(r.status)) ? true : undefined;
    }, 420_000, 250);
    const loops = await runsOf(stack, 'loop');
    t.same(loops.map((r) => r.chain_depth), [1, 2, 3, 4], 'one run per hop up to the limit, then nothing');
    t.equal(loops.at(-1)!.status, 'failed', 'the run whose emit was refused failed, visibly');
  });

  await t.test('a delivery that throws five times lands in the DLQ; event-dlq retry delivers it once it can succeed', async (t) => {
    // The deployer's stored registration is damaged, so delivering to it throws.
    const saved = await one(stack, sql.unsafe`SELECT lock_entry::text AS entry FROM registrations WHERE workflow = 'deployer'`);
    await stack.pool.query(sql.unsafe`UPDATE registrations SET lock_entry = '{"damaged": true}'::jsonb WHERE workflow = 'deployer'`);
    const sha = await stack.pushWorkflow({ 'README.md': 'second push\n' });
    t.equal((await stack.waitForRun(sha, 420_000)).status, 'completed');
    const dead = await until('the event in the DLQ', async () => {
      const listed = await stack.admin(['event-dlq', 'list', '--json']);
      if (listed.code !== 0) throw new Error(listed.stderr);
      const events = (JSON.parse(listed.stdout) as { events: Array<{ id: string; name: string; attempts: number; dlqReason: string; lastError: string | null }> }).events;
      return events.find((e) => e.name === 'deploy-requested');
    }, 120_000, 500);
    t.match(dead, { attempts: 5, dlqReason: 'exhausted_retries' }, 'five attempts, then exhausted_retries');
    t.ok(dead.lastError, 'with the last error');
    const human = await stack.admin(['event-dlq', 'list']);
    t.match(human.stdout, /exhausted_retries/);
    t.equal((await runsOf(stack, 'deployer')).length, 1, 'no run was made for it');

    await stack.pool.query(sql.unsafe`UPDATE registrations SET lock_entry = ${String(saved['entry'])}::jsonb WHERE workflow = 'deployer'`);
    const retried = await stack.admin(['event-dlq', 'retry', dead.id]);
    t.equal(retried.code, 0, retried.stderr);
    await until('the retried event to run the deployer', async () => ((await runsOf(stack, 'deployer')).length === 2 ? true : undefined), 120_000, 250);
    await until('the event processed', async () => {
      const row = await one(stack, sql.unsafe`SELECT processed_at IS NOT NULL AS done FROM internal_events WHERE id = ${dead.id}`);
      return row['done'] === true ? true : undefined;
    }, 60_000, 250);
    t.equal((await runsOf(stack, 'deployer')).length, 2, 'delivered exactly once after the retry');
    t.equal((await stack.admin(['event-dlq', 'count'])).stdout.trim(), '0', 'the DLQ is empty again');
  });

  await t.test('a schedule fires exactly once per due time across three nodes, through a leader SIGKILL', async (t) => {
    const firings = async () =>
      (await stack.pool.any(sql.unsafe`
        SELECT e.payload->>'scheduledAt' AS at, count(*)::int AS events FROM internal_events e
        WHERE e.name = '__schedule_fire' GROUP BY 1 ORDER BY 1`)) as unknown as Array<{ at: string; events: number }>;
    // The first due time is a minute boundary; if it has not come yet, its minute passes: it is
    // moved a minute back whole (still a boundary, now due). Guarded by "never fired", and the
    // scheduler's claim by the due time it read: a firing racing this move is made once either way.
    const boundary = await one(stack, sql.unsafe`SELECT next_due_at = date_trunc('minute', next_due_at) AS ok FROM schedules WHERE workflow = 'nightly'`);
    t.equal(boundary['ok'], true, 'the scheduler keeps the due time on a minute boundary');
    await stack.pool.query(sql.unsafe`UPDATE schedules SET next_due_at = next_due_at - interval '1 minute' WHERE workflow = 'nightly' AND last_fired_at IS NULL`);
    const first = await until('the first minute firing', async () => ((await firings()).length > 0 ? firings() : undefined), 90_000, 250);
    t.equal(new Date(first[0]!.at).getUTCSeconds(), 0, 'scheduledAt is the minute boundary');
    // Then four more due times, each a moment ahead, the third after the leader is killed.
    const due = async (label: string) => {
      const row = await one(stack, sql.unsafe`
        UPDATE schedules SET next_due_at = date_trunc('milliseconds', now() + interval '700 milliseconds') WHERE workflow = 'nightly'
        RETURNING to_char(next_due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at`);
      const at = String(row['at']);
      await until(`the ${label} firing`, async () => ((await firings()).some((f) => f.at === at) ? true : undefined), 60_000, 100);
      return at;
    };
    await due('second');
    await due('third');
    t.same(await leadersOf(stack), ['node-1'], 'node-1 leads');
    // SIGKILL: no clean stop, the lock goes with the dead session.
    const killed = (await one(stack, sql.unsafe`SELECT pid FROM cluster_nodes WHERE node_id = 'node-1'`))['pid'];
    process.kill(Number(killed), 'SIGKILL');
    const next = await until('another node to lead', async () => {
      const l = (await leadersOf(stack)).filter((n) => n !== 'node-1');
      return l.length === 1 ? l[0] : undefined;
    }, 60_000, 100);
    t.ok(['node-2', 'node-3'].includes(next), `leadership moved to ${next}`);
    await due('fourth');
    await due('fifth');
    const all = await firings();
    t.ok(all.length >= 5, `${all.length} due times fired`);
    t.same(all.filter((f) => f.events !== 1), [], 'one event per due time');
    await until('a run per firing', async () => {
      const n = await one(stack, sql.unsafe`SELECT count(*)::int AS n FROM runs WHERE workflow = 'nightly'`);
      return Number(n['n']) >= all.length ? true : undefined;
    }, 60_000, 200);
    const runs = (await stack.pool.any(sql.unsafe`
      SELECT event->'payload'->>'scheduledAt' AS at, count(*)::int AS runs FROM runs WHERE workflow = 'nightly' GROUP BY 1`)) as unknown as Array<{ at: string; runs: number }>;
    t.equal(runs.length, all.length, 'every firing became a run');
    t.same(runs.filter((r) => r.runs !== 1), [], 'no due time has two runs');
    t.same(
      ((await stack.pool.any(sql.unsafe`SELECT event_name, chain_depth FROM runs WHERE workflow = 'nightly' LIMIT 1`)) as unknown as Array<Record<string, unknown>>)[0],
      { event_name: 'schedule', chain_depth: 0 },
      "a scheduled run's event_name is schedule",
    );

    // A default-branch push without the schedule drops it: nothing fires any more.
    await stack.repositories['acme/lib']!.pushWorkflow({ '.svc/workflows/nightly.ts': null });
    await until('the schedule to be dropped', async () => {
      const row = await one(stack, sql.unsafe`SELECT count(*)::int AS n FROM schedules WHERE workflow = 'nightly'`);
      return Number(row['n']) === 0 ? true : undefined;
    }, 60_000, 200);
  });
  await t.test('a node SIGKILLed while holding a lease: another node delivers the event after the lease expires, once', async (t) => {
    // Hold inserts into runs, so whichever node leases the event blocks inside its delivery.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = stack.pool.connect((c) =>
      c.transaction(async (tx) => {
        await tx.query(sql.unsafe`LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE`);
        locked();
        await released;
      }),
    );
    await isLocked;
    const id = String((await one(stack, sql.unsafe`SELECT gen_random_uuid()::text AS id`))['id']);
    await stack.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`INSERT INTO internal_events (id, name, payload, org_id, source) VALUES (${id}, 'deploy-requested', '{"env":"lease"}'::jsonb, 'acme', 'step')`);
      await tx.query(sql.unsafe`SELECT pg_notify('svc_internal_events', ${JSON.stringify({ id, name: 'deploy-requested', orgId: 'acme' })})`);
    });
    const holderNode = await until('a node to lease the event', async () => {
      const row = await one(stack, sql.unsafe`SELECT lease_node FROM internal_events WHERE id = ${id}`);
      return row['lease_node'] === null ? undefined : String(row['lease_node']);
    }, 60_000, 50);
    const pid = Number((await one(stack, sql.unsafe`SELECT pid FROM cluster_nodes WHERE node_id = ${holderNode}`))['pid']);
    process.kill(pid, 'SIGKILL');
    release();
    await holder;
    // Its lease runs out: moved an hour back (the sweep of a live node then releases it). On a
    // slow machine the lease may have run out and been released already: then nothing is moved.
    await stack.pool.query(sql.unsafe`UPDATE internal_events SET lease_until = lease_until - interval '1 hour'
      WHERE id = ${id} AND lease_node = ${holderNode} AND processed_at IS NULL`);
    const delivered = await until('the event delivered by another node', async () => {
      const row = await one(stack, sql.unsafe`SELECT processed_at IS NOT NULL AS done, lease_node, attempts FROM internal_events WHERE id = ${id}`);
      return row['done'] === true ? row : undefined;
    }, 120_000, 250);
    t.not(delivered['lease_node'], holderNode, `delivered by ${String(delivered['lease_node'])}, not by the killed ${holderNode}`);
    t.equal(delivered['attempts'], 2, 'the second attempt, after the lease expired');
    const runs = await one(stack, sql.unsafe`SELECT count(*)::int AS n FROM runs WHERE triggering_event_id = ${id}`);
    t.equal(runs['n'], 1, 'exactly one run');
  });
});
