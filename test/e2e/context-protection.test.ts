// Secret context protection rules end to end with REAL processes (test/fixtures/jobs-stack.ts):
// svc-relay, svc-orchestrator, two svc-agent processes (an agent runs one job at a time: two, so
// only the context limit can serialize two jobs), real PostgreSQL, a bare repository with the
// post-receive hook. Contexts, secrets and rules through `svc-admin context create|protect` and
// `svc-admin secret set`; decisions through `svc-admin approvals approve`. Each workflow runs on
// its own branch; its job prints a value derived from the released secret (length and a sha256
// prefix, never the secret) so the test can tell the job received it.
//   - required reviewer alice: the job stays `held` (nothing dispatched, no log), a non-reviewer's
//     approval is refused with the reason, alice's releases it and the job gets the secret;
//   - wait timer 60 s: the job waits with the timer's reason, still waits after two run-control
//     passes, and (its time moved an hour on in the database, not waited out) is dispatched no
//     earlier than 60 s after it became ready;
//   - concurrency limit 1: two runs' jobs never hold the context at once.
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { eachDatabase } from '../fixtures/db.ts';
import { startJobsStack, type JobsStack } from '../fixtures/jobs-stack.ts';
import { DISPATCH_PASSES, morePasses, RUN_CONTROL_PASSES } from '../fixtures/passes.ts';
import { until } from '../fixtures/runs.ts';
import { sql } from '../../kernel/services/db/index.ts';

t.setTimeout(1_800_000);

const SECRETS = {
  reviewed: 'e2e-reviewed-token-7c1d9a03f5',
  timed: 'e2e-timed-token-52be0e9d4a17',
  limited: 'e2e-limited-token-a83f6c2b90d4e1',
} as const;
type ContextName = keyof typeof SECRETS;

const WAIT_TIMER_S = 60;

const derived = (value: string) => `length=${value.length} sha256=${createHash('sha256').update(value).digest('hex').slice(0, 12)}`;

/**
 * With `gateDir`, the step holds (with the context) until the test creates a file named after
 * the commit there: the test, not a sleep, decides how long a `limited` job keeps the context.
 * The directory is outside /tmp, which the process sandbox replaces with an empty tmpfs.
 */
const workflow = (context: ContextName, gateDir?: string) => `import { job, push, workflow } from 'svc/sdk';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
export default workflow('${context}', {
  on: push({ branches: ['${context}'] }),
  jobs: {
    ship: job({
      runsOn: 'e2e',
      contexts: ['${context}'],
      steps: (s) => s.step('use-secret', async (ctx) => {
        const value = ctx.secrets.get('TOKEN');
        console.log('ship received ' + (value === undefined ? 'nothing' : 'length=' + value.length + ' sha256=' + createHash('sha256').update(value).digest('hex').slice(0, 12)));
        ${gateDir === undefined ? '' : `const gate = ${JSON.stringify(gateDir)} + '/' + String(ctx.event.sha);
        while (!existsSync(gate)) await new Promise((resolve) => setTimeout(resolve, 100));`}
        console.log('ship done');
      }),
    }),
  },
});
`;

interface ShipJob {
  id: string;
  run_id: string;
  status: string;
  reason: string | null;
  attempts: number;
  agent_id: string | null;
  ready_at: number | null;
  queued_at: number | null;
  dispatched_at: number | null;
  started_at: number | null;
  finished_at: number | null;
}

const SHIP_COLUMNS = sql.fragment`
  id::text as id, run_id::text as run_id, status, reason, attempts, agent_id,
  (extract(epoch from ready_at) * 1000)::float8 as ready_at, (extract(epoch from queued_at) * 1000)::float8 as queued_at,
  (extract(epoch from dispatched_at) * 1000)::float8 as dispatched_at, (extract(epoch from started_at) * 1000)::float8 as started_at,
  (extract(epoch from finished_at) * 1000)::float8 as finished_at`;

async function runOf(stack: JobsStack, sha: string, workflowName: string): Promise<{ id: string; status: string; reason: string | null } | null> {
  return (await stack.pool.maybeOne(sql.unsafe`
    select id::text as id, status, reason from runs where sha = ${sha} and workflow = ${workflowName} and parent_run_id is null`)) as { id: string; status: string; reason: string | null } | null;
}

async function shipOf(stack: JobsStack, runId: string): Promise<ShipJob> {
  return (await stack.pool.one(sql.unsafe`select ${SHIP_COLUMNS} from jobs where run_id = ${runId} and name = 'ship'`)) as unknown as ShipJob;
}

async function logText(stack: JobsStack, jobId: string): Promise<string> {
  const rows = (await stack.pool.any(sql.unsafe`select lines from job_logs where job_id = ${jobId} order by seq`)) as unknown as Array<{ lines: Array<{ text: string }> }>;
  return rows.flatMap((r) => r.lines.map((l) => l.text)).join('\n');
}

/** A commit pushed to `branch`; the hook must have delivered it. */
async function pushTo(stack: JobsStack, branch: string, note: string): Promise<string> {
  const sha = await stack.remote.commit({ 'notes.txt': `${branch} ${note}\n` }, `${branch}: ${note}`);
  const pushed = await stack.remote.push(`HEAD:refs/heads/${branch}`);
  if (/NOT delivered/.test(pushed.stderr)) throw new Error(`the hook did not deliver the push to ${branch}: ${pushed.stderr}`);
  return sha;
}

/** The run of `workflowName` at `sha` (once it exists). */
function runFor(stack: JobsStack, sha: string, workflowName: string): Promise<{ id: string; status: string; reason: string | null }> {
  return until(`the ${workflowName} run of ${sha.slice(0, 8)}`, async () => (await runOf(stack, sha, workflowName)) ?? undefined, 120_000, 100);
}

async function terminalRun(stack: JobsStack, runId: string, timeoutMs = 240_000): Promise<{ status: string; reason: string | null }> {
  try {
    return await until(`run ${runId} to end`, async () => {
      const run = (await stack.pool.one(sql.unsafe`select status, reason from runs where id = ${runId}`)) as { status: string; reason: string | null };
      return ['completed', 'failed', 'cancelled', 'skipped'].includes(run.status) ? run : undefined;
    }, timeoutMs, 200);
  } catch (error) {
    const jobs = (await stack.pool.any(sql.unsafe`
      select name, kind, status, reason, agent_id, waits_for_build, held_contexts from jobs where run_id = ${runId} order by created_at`)) as unknown as Array<Record<string, unknown>>;
    throw new Error(`${(error as Error).message}; its jobs:\n${jobs.map((j) => JSON.stringify(j)).join('\n')}`);
  }
}

/**
 * Waits until no build job is pending anywhere: a later run of the workflow then finds the source
 * cached instead of coalescing on the build. (This file is about
 * context protection; build coalescing has its own tests.)
 */
async function buildSettled(stack: JobsStack): Promise<void> {
  await until('no pending build job', async () => {
    const pending = (await stack.pool.oneFirst(sql.unsafe`
      select count(*)::int from jobs where kind = 'build' and build_key is not null and status in ('waiting', 'queued', 'dispatched', 'running', 'recovering')`)) as number;
    return pending === 0 ? true : undefined;
  }, 180_000, 100);
}

/**
 * Two whole passes of the run-control worker (it releases holds and wait timers) and of the
 * dispatcher (woken through its channel, as a queued job wakes it): whatever they would move,
 * they have moved; "nothing moved" is read after them, never after a sleep.
 */
async function workersPassed(stack: JobsStack): Promise<void> {
  await morePasses(stack.orchUrl, RUN_CONTROL_PASSES);
  await morePasses(stack.orchUrl, DISPATCH_PASSES, { wake: () => stack.pool.query(sql.unsafe`SELECT pg_notify('svc_jobs', '')`) });
}

await eachDatabase(t, async (t, db) => {
  const stack = await startJobsStack(t, db);
  const gateDir = await mkdtemp(join('/var/tmp', 'svc-e2e-gates-'));
  t.teardown(() => rm(gateDir, { recursive: true, force: true }));
  const admin = async (args: string[]) => {
    const out = await stack.admin(args);
    t.equal(out.code, 0, `svc-admin ${args.join(' ')}: ${out.stderr}`);
    t.notMatch(out.stdout + out.stderr, new RegExp(Object.values(SECRETS).join('|')), 'svc-admin never prints a secret');
    return out;
  };
  await admin(['context', 'create', 'reviewed', '--repositories', 'acme/app', '--min-trust', 'any', '--required-reviewer', 'alice']);
  await admin(['context', 'create', 'timed', '--repositories', 'acme/app', '--min-trust', 'any', '--wait-timer', String(WAIT_TIMER_S)]);
  // The limit through `context protect`, on a context created without it.
  await admin(['context', 'create', 'limited', '--repositories', 'acme/app', '--min-trust', 'any']);
  await admin(['context', 'protect', 'limited', '--concurrency-limit', '1']);
  for (const [context, value] of Object.entries(SECRETS)) {
    const file = join(stack.root, `${context}.secret`);
    await writeFile(file, `${value}\n`, { mode: 0o600 });
    await admin(['secret', 'set', context, 'TOKEN', '--value-file', file]);
  }
  const rules = (await stack.pool.any(sql.unsafe`
    select name, required_reviewers, wait_timer_seconds, concurrency_limit from secret_contexts order by name`)) as unknown as Array<Record<string, unknown>>;
  t.same(rules, [
    { name: 'limited', required_reviewers: [], wait_timer_seconds: 0, concurrency_limit: 1 },
    { name: 'reviewed', required_reviewers: ['alice'], wait_timer_seconds: 0, concurrency_limit: null },
    { name: 'timed', required_reviewers: [], wait_timer_seconds: WAIT_TIMER_S, concurrency_limit: null },
  ], 'the protection rules as svc-admin set them');

  // Every branch exists before any workflow does; the workflows only run on their own branch.
  await stack.remote.commit({ 'README.md': 'context protection e2e\n' }, 'init');
  for (const branch of ['main', 'reviewed', 'timed', 'limited']) await stack.remote.push(`HEAD:refs/heads/${branch}`);
  await stack.pushWorkflow({
    '.svc/workflows/reviewed.ts': workflow('reviewed'),
    '.svc/workflows/timed.ts': workflow('timed'),
    '.svc/workflows/limited.ts': workflow('limited', gateDir),
  }, 'add workflows');
  for (const n of [1, 2]) await stack.startAgent({ SVC_AGENT_ID: `ctx-agent-${n}` });

  await t.test('required reviewer: held until alice approves; a non-reviewer is refused; then the job gets the secret', async (t) => {
    const sha = await pushTo(stack, 'reviewed', 'reviewed');
    const run = await runFor(stack, sha, 'reviewed');
    const held = await until('the ship job to be held', async () => {
      const job = await shipOf(stack, run.id);
      return job.status === 'held' ? job : undefined;
    }, 180_000, 100);
    t.match(held.reason, /^Awaiting approval \(secret context reviewed\): secret context reviewed requires a reviewer \(alice\) to approve before its secrets are released$/);
    const holds = (await stack.pool.any(sql.unsafe`
      select level, context, status, job_id::text as job_id from approval_holds where run_id = ${run.id}`)) as unknown as Array<Record<string, unknown>>;
    t.same(holds, [{ level: 'context', context: 'reviewed', status: 'pending', job_id: held.id }], 'one pending context hold on the job');

    // It stays held: nothing dispatched, no agent, no log line, through two passes of the workers
    // that could move it (two idle agents are connected).
    await workersPassed(stack);
    t.match(await shipOf(stack, run.id), { status: 'held', attempts: 0, agent_id: null, dispatched_at: null }, 'held after two run-control and two dispatcher passes');
    t.equal(await logText(stack, held.id), '', 'the agent ran nothing for the held job');
    t.match((await stack.pool.oneFirst(sql.unsafe`select status from runs where id = ${run.id}`)) as string, /^(queued|running)$/, 'the run waits with its job');

    const mallory = await stack.admin(['approvals', 'approve', run.id, '--actor', 'mallory', '--job', 'ship']);
    t.not(mallory.code, 0, 'a non-reviewer approval is refused (exit code)');
    t.match(mallory.stdout + mallory.stderr, /mallory may not decide this context hold: it needs 1 of users alice/, 'with the reason');
    const votes = (await stack.pool.any(sql.unsafe`
      select actor, decision, via, counted, ignored_reason from approval_votes where run_id = ${run.id} order by created_at`)) as unknown as Array<Record<string, unknown>>;
    t.match(votes, [{ actor: 'mallory', decision: 'approve', via: 'admin', counted: false, ignored_reason: /mallory may not decide this context hold/ }]);
    await workersPassed(stack);
    const still = await shipOf(stack, run.id);
    t.equal(still.status, 'held', 'still held after the ignored approval');
    t.equal(still.dispatched_at, null);

    const alice = await stack.admin(['approvals', 'approve', run.id, '--actor', 'alice', '--job', 'ship', '--comment', 'go']);
    t.equal(alice.code, 0, `alice approves: ${alice.stderr}`);
    const ended = await terminalRun(stack, run.id);
    const job = await shipOf(stack, run.id);
    t.equal(ended.status, 'completed', `run completed (${ended.reason ?? ''}; ship ${job.status} ${job.reason ?? ''})`);
    t.equal(job.status, 'completed');
    const hold = (await stack.pool.one(sql.unsafe`select status, outcome, decided_by from approval_holds where run_id = ${run.id}`)) as Record<string, unknown>;
    t.same(hold, { status: 'approved', outcome: 'approved by alice', decided_by: 'alice' });
    const logs = await logText(stack, job.id);
    t.match(logs, new RegExp(`^ship received ${derived(SECRETS.reviewed)}$`, 'm'), 'the job received the context secret');
    t.notMatch(logs, SECRETS.reviewed, 'the secret itself is never in the log');
  });

  await t.test(`wait timer ${WAIT_TIMER_S} s: waiting with the timer's reason, dispatched no earlier than ${WAIT_TIMER_S} s after ready`, async (t) => {
    const sha = await pushTo(stack, 'timed', 'timed');
    const run = await runFor(stack, sha, 'timed');
    const waiting = await until('the ship job waiting on the wait timer', async () => {
      const job = await shipOf(stack, run.id);
      if (['dispatched', 'running', 'completed', 'failed', 'cancelled', 'skipped'].includes(job.status)) throw new Error(`ship went ${job.status} without being seen waiting on the timer (${job.reason ?? ''})`);
      return job.status === 'waiting' && job.reason?.startsWith('Wait timer') === true ? job : undefined;
    }, 180_000, 50);
    t.match(waiting.reason, new RegExp(`^Wait timer of secret context timed \\(${WAIT_TIMER_S} s\\): released at \\d{4}-\\d\\d-\\d\\dT\\S+Z$`), 'the wait-timer reason');
    const releasedAt = Date.parse(/released at (\S+)$/.exec(waiting.reason!)![1]!);
    t.ok(releasedAt - waiting.ready_at! >= WAIT_TIMER_S * 1000 - 1, 'released at = ready + the timer', { releasedAt, readyAt: waiting.ready_at });
    t.equal(waiting.dispatched_at, null);
    // Not before its time: two whole passes leave it waiting, undispatched.
    await workersPassed(stack);
    t.match(await shipOf(stack, run.id), { status: 'waiting', queued_at: null, dispatched_at: null }, 'still waiting on its timer');
    // Its minute passes: the job became ready an hour earlier (the timer stays 60 s).
    await stack.pool.query(sql.unsafe`UPDATE jobs SET ready_at = ready_at - interval '1 hour' WHERE id = ${waiting.id} AND status = 'waiting'`);
    const readyAt = (await shipOf(stack, run.id)).ready_at;

    const ended = await terminalRun(stack, run.id);
    const job = await shipOf(stack, run.id);
    t.equal(ended.status, 'completed', `run completed (${ended.reason ?? ''}; ship ${job.status} ${job.reason ?? ''})`);
    t.equal(job.ready_at, readyAt, 'ready_at did not move but for the hour the test moved it');
    // A lower bound only (never an upper one): 5 ms allow the gate's millisecond clock against
    // PostgreSQL's microsecond timestamps.
    const floor = WAIT_TIMER_S * 1000 - 5;
    t.ok(job.queued_at! - job.ready_at! >= floor, `queued ${Math.round(job.queued_at! - job.ready_at!)} ms after ready (>= ${WAIT_TIMER_S} s)`);
    t.ok(job.dispatched_at! - job.ready_at! >= floor, `dispatched ${Math.round(job.dispatched_at! - job.ready_at!)} ms after ready (>= ${WAIT_TIMER_S} s)`);
    t.ok(job.started_at! - job.ready_at! >= floor, `started ${Math.round(job.started_at! - job.ready_at!)} ms after ready (>= ${WAIT_TIMER_S} s)`);
    const logs = await logText(stack, job.id);
    t.match(logs, new RegExp(`^ship received ${derived(SECRETS.timed)}$`, 'm'), 'the job received the context secret');
    t.notMatch(logs, SECRETS.timed);
  });

  await t.test('concurrency limit 1: two runs using the context never hold it at the same time', async (t) => {
    const connected = (await stack.pool.oneFirst(sql.unsafe`select count(*)::int from agents where connected`)) as number;
    t.equal(connected, 2, 'two agents: capacity for both jobs at once');
    const sha1 = await pushTo(stack, 'limited', 'first');
    const run1 = await runFor(stack, sha1, 'limited');
    await buildSettled(stack);
    const sha2 = await pushTo(stack, 'limited', 'second');
    const runs = [run1, await runFor(stack, sha2, 'limited')];
    // One job holds the context while the other, ready, waits for it with the limit's reason.
    const seen = await until('one ship job running while the other waits on the context limit', async () => {
      const jobs = await Promise.all(runs.map((r) => shipOf(stack, r.id)));
      const running = jobs.find((j) => j.status === 'running');
      const blocked = jobs.find((j) => j.status === 'waiting' && j.ready_at !== null && /^Waiting: secret context limited allows 1 job\(s\) at once and 1 hold it$/.test(j.reason ?? ''));
      return running !== undefined && blocked !== undefined ? { running, blocked } : undefined;
    }, 180_000, 100);
    t.not(seen.running.id, seen.blocked.id);
    // Let both steps end: the blocked one still waits for the context, then runs through.
    for (const sha of [sha1, sha2]) await writeFile(join(gateDir, sha), '');

    const ended = [await terminalRun(stack, runs[0]!.id), await terminalRun(stack, runs[1]!.id)];
    const jobs = (await Promise.all(runs.map((r) => shipOf(stack, r.id)))).sort((a, b) => a.dispatched_at! - b.dispatched_at!);
    const summary = jobs.map((j) => `${j.id} ${j.status} ready=${j.ready_at} dispatched=${j.dispatched_at} finished=${j.finished_at} on ${j.agent_id}`).join('\n');
    for (const [i, r] of ended.entries()) t.equal(r.status, 'completed', `run ${i + 1} completed`, { summary });
    const [first, second] = jobs as [ShipJob, ShipJob];
    t.equal(first.id, seen.running.id, 'the job seen running held the context first');
    t.ok(second.ready_at! < first.finished_at!, 'the second job was ready while the first held the context', { summary });
    t.ok(second.dispatched_at! >= first.finished_at!, "the second job's dispatched_at is at or after the first one's finished_at", { summary });
    t.ok(second.queued_at! >= first.finished_at!, 'the second job was queued only once the first had finished', { summary });
    for (const job of jobs) {
      const logs = await logText(stack, job.id);
      t.match(logs, new RegExp(`^ship received ${derived(SECRETS.limited)}$`, 'm'), 'each job received the context secret');
      t.notMatch(logs, SECRETS.limited);
    }
  });
});
