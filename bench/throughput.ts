// Throughput at scale: webhooks → runs → jobs dispatched → completed, through svc-relay and one
// svc-orchestrator, then a cluster of three orchestrators on one database (compiled bins, dist/,
// separate processes, fresh databases of the system PostgreSQL). Agents speak the real protocol
// from separate processes (agent.register, job.dispatch answered with job.status running →
// completed), spread over the orchestrators. The offered rate steps up (lib/webhook-sender.ts, a
// process of its own, each step after a 1 s warm-up at its rate) until a step is not sustained:
// every webhook answered 200, every run's job dispatched and completed within 5 s of the step's
// end, p99 queued → dispatched under 1 s. Prints per step the runs/s created and completed and the
// dispatch latency; then where the CPU went per run (relay, each orchestrator, the agents' and the
// sender's processes, PostgreSQL's backends of these databases, from /proc/<pid>/stat) and what
// the database did per run: transactions and rows from pg_stat_database (pg_stat_statements needs
// shared_preload_libraries and a server restart; where it is loaded, calls per run are printed
// too). Bounded, loopback only:
//   node bench/throughput.ts [--nodes 1|3|both] [--rates 25,50,100,...] [--step-seconds S]
//                            [--agents N] [--agent-processes P] [--busy] [--keep-data]
// Target: >= 100 runs/s on a 2-core machine. 20,000 idle agents: bench/many-agents.ts --agents 20000.
// `npm run build` first.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import WebSocket from 'ws';
import { AGENT_SDK_VERSION } from '../agent/agent.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../kernel/orchestrator/database.ts';
import { createSource } from '../kernel/orchestrator/sources/store.ts';
import { migrateRelay, provisionOrg } from '../kernel/relay/index.ts';
import { createDatabase, migrate, sql } from '../kernel/services/db/index.ts';
import { PROTOCOL_VERSION } from '../schemas/wire/relay.ts';
import { job, trig, workflow } from '../test/fixtures/locks.ts';
import { buildLock } from '../workflow/lock/lock-file.ts';
import { warmSender } from './lib/sender-process.ts';
import { cpuSeconds, distBin, keepOrRemove, percentile, rssMiB, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string', default: 'both' },
    rates: { type: 'string', default: '25,50,100,150,200,300,400' },
    'step-seconds': { type: 'string', default: '10' },
    agents: { type: 'string', default: '200' },
    'agent-processes': { type: 'string', default: '2' },
    busy: { type: 'boolean', default: false },
    'keep-data': { type: 'boolean', default: false },
    child: { type: 'string' },
  },
});

// ---------------------------------------------------------------- the agents' processes
async function agentsProcess(urls: string[], count: number, first: number): Promise<void> {
  let open = 0;
  let refused = 0;
  const connect = (index: number) =>
    new Promise<void>((resolve) => {
      const ws = new WebSocket(urls[index % urls.length]!, { perMessageDeflate: false });
      ws.on('open', () => {
        ws.send(JSON.stringify({
          type: 'agent.register', protocolVersion: PROTOCOL_VERSION, agentId: `tp-agent-${index}`, labels: ['linux', 'bench'], os: 'linux', arch: 'x64',
          ephemeral: false, sandboxes: ['process'], sdkVersion: AGENT_SDK_VERSION, inFlightJobs: [],
        }));
      });
      ws.on('message', (data) => {
        const message = JSON.parse(data.toString()) as { type: string; jobId?: string };
        if (message.type === 'agent.registered') {
          open += 1;
          resolve();
        }
        if (message.type === 'job.dispatch' && message.jobId !== undefined) {
          const at = new Date().toISOString();
          ws.send(JSON.stringify({ type: 'job.status', jobId: message.jobId, status: 'running', steps: [], startedAt: at }));
          ws.send(JSON.stringify({ type: 'job.status', jobId: message.jobId, status: 'completed', steps: [], startedAt: at, finishedAt: new Date().toISOString() }));
        }
      });
      ws.on('error', () => {
        refused += 1;
        resolve();
      });
      ws.on('close', () => resolve());
    });
  for (let i = first; i < first + count; i += 50) await Promise.all(Array.from({ length: Math.min(50, first + count - i) }, (_, k) => connect(i + k)));
  process.send!({ open, refused });
}

function startAgents(urls: string[], count: number, first: number, children: ChildProcess[]): Promise<{ child: ChildProcess; open: number }> {
  const self = fileURLToPath(import.meta.url);
  // Raise the soft descriptor limit to the hard one before Node starts (one descriptor per socket).
  const child = fork(self, ['--child', JSON.stringify({ urls, count, first })], {
    execPath: '/bin/sh',
    execArgv: ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`agents process exited ${code}`)));
    child.once('message', (m: { open: number; refused: number }) => resolve({ child, open: m.open }));
  });
}

// ---------------------------------------------------------------- the stack
const logger = pino({ level: 'silent' });
const serverUrl = process.env['SVC_TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';
const STEP_SECONDS = Math.max(3, Math.min(120, Number(values['step-seconds'])));
const RATES = values.rates.split(',').map(Number).filter((r) => r > 0 && r <= 5000);
const AGENTS = Math.max(1, Math.min(20_000, Number(values.agents)));
const AGENT_PROCESSES = Math.max(1, Math.min(16, Number(values['agent-processes'])));

function urlFor(name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

function start(bin: string, name: string, env: NodeJS.ProcessEnv, children: ChildProcess[]): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} not ready: ${out}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-20_000);
      const m = new RegExp(`${name} ready (\\S+)`).exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, output: () => out });
      }
    });
    child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    child.on('exit', (code) => reject(new Error(`${name} exited ${code}: ${out.slice(-4000)}`)));
  });
}

/** CPU seconds of PostgreSQL's backends serving these databases (their title names the database). */
function backendCpu(dbNames: string[]): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!cmd.startsWith('postgres:') || !dbNames.some((d) => cmd.includes(` ${d} `))) continue;
      total += cpuSeconds(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return total;
}

interface DbCounters {
  xact: number;
  fetched: number;
  inserted: number;
  updated: number;
  deleted: number;
}

async function dbCounters(client: pg.Client, name: string): Promise<DbCounters> {
  // The statistics snapshot is per transaction: clear it so each read is current.
  await client.query('select pg_stat_clear_snapshot()');
  const row = (await client.query(`select xact_commit + xact_rollback as xact, tup_fetched, tup_inserted, tup_updated, tup_deleted from pg_stat_database where datname = $1`, [name])).rows[0] as Record<string, string>;
  return { xact: Number(row['xact']), fetched: Number(row['tup_fetched']), inserted: Number(row['tup_inserted']), updated: Number(row['tup_updated']), deleted: Number(row['tup_deleted']) };
}

interface Step {
  rate: number;
  sent: number;
  refused: number;
  runs: number;
  completed: number;
  p50: number;
  p99: number;
  createdPerSecond: number;
  completedPerSecond: number;
  sustained: boolean;
  cpu: Record<string, number>;
  db: Record<string, DbCounters>;
}

async function topology(nodes: number): Promise<void> {
  const children: ChildProcess[] = [];
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const relayDb = `svc_bench_tp_relay_${suffix}`;
  const orchDb = `svc_bench_tp_orch_${suffix}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-throughput-'));
  for (const name of [relayDb, orchDb]) await admin(`CREATE DATABASE ${name}`);
  const stats = new pg.Client({ connectionString: urlFor(orchDb) });
  // Two connections: the bench's reads are few, and a shared server's max_connections is not only ours.
  const orchPool = await createDatabase({ url: urlFor(orchDb), logger, maxPoolSize: 2 });
  try {
    const relayPool = await createDatabase({ url: urlFor(relayDb), logger });
    await migrateRelay(relayPool, logger);
    const { token } = await provisionOrg(relayPool, 'bench');
    await relayPool.end();
    await migrate(orchPool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger });
    const masterKey = randomBytes(32);
    const settings = { signature: { mode: 'none' }, maxPayloadBytes: 65536, rateLimitRpm: 1_000_000, eventType: { payloadField: 'event' }, idempotencyWindowSeconds: 3600 };
    const generic = await createSource(orchPool, masterKey, { orgId: 'bench', providerKind: 'generic', sourceId: 'bench', settings });
    const entry = buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('on-match', [trig.webhook({ events: ['match'] })], [job('work')])] }).workflows[0]!;
    await orchPool.query(sql.unsafe`
      insert into registrations (id, org_id, source_id, repository, branch, sha, workflow, trigger_index, trigger_type, event_names, trigger, lock_entry)
      values (${randomUUID()}, 'bench', ${generic.source.id}, 'bench/app', 'main', ${'a'.repeat(40)}, 'on-match', 0, 'webhook', '{match}',
        ${sql.jsonb(entry.triggers[0] as never)}, ${sql.jsonb(entry as never)})`);

    const relay = await start(distBin('svc-relay'), 'svc-relay', {
      ...process.env, SVC_RELAY_DATABASE_URL: urlFor(relayDb), SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_SERVER_LOG_LEVEL: 'warn',
      SVC_DATA_DIR: path.join(dataDir, 'relay'), SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '100000000', SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '100000000',
    }, children);
    const orchs: { child: ChildProcess; url: string; output: () => string }[] = [];
    for (let i = 0; i < nodes; i += 1) {
      const nodeDir = path.join(dataDir, `orch-${i}`);
      // A warm source cache in each node's storage (the pointer a build would write): jobs need no build.
      const pointerDir = path.join(nodeDir, 'storage', 'source', 'v2', 'bench');
      mkdirSync(pointerDir, { recursive: true });
      writeFileSync(path.join(pointerDir, `${entry.contentHash}.hash`), 'digest');
      orchs.push(await start(distBin('svc-orchestrator'), 'svc-orchestrator', {
        ...process.env, SVC_DATABASE_URL: urlFor(orchDb), SVC_SECRET_KEY: masterKey.toString('base64'), SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1',
        SVC_SERVER_LOG_LEVEL: 'warn', SVC_DATA_DIR: nodeDir, SVC_PLATFORM_URL: relay.url, SVC_PLATFORM_TOKEN: token, SVC_INSTANCE_ID: `bench-orch-${i}`, SVC_AGENT_AUTH: 'none',
      }, children));
    }
    const agentUrls = orchs.map((o) => `${o.url.replace(/^http/, 'ws')}/v1/agents/connect`);
    const agentProcs: ChildProcess[] = [];
    let open = 0;
    const per = Math.ceil(AGENTS / AGENT_PROCESSES);
    for (let p = 0; p < AGENT_PROCESSES && p * per < AGENTS; p += 1) {
      const started = await startAgents(agentUrls, Math.min(per, AGENTS - p * per), p * per, children);
      agentProcs.push(started.child);
      open += started.open;
    }
    await stats.connect();
    const statements = (await stats.query(`select count(*)::int as n from pg_extension where extname = 'pg_stat_statements'`)).rows[0].n > 0
      && (await stats.query(`select current_setting('shared_preload_libraries') as l`)).rows[0].l.includes('pg_stat_statements');
    process.stdout.write(`\n== ${nodes === 1 ? 'one orchestrator' : `a cluster of ${nodes} orchestrators on one database`}, one relay; ${open} of ${AGENTS} agents registered from ${agentProcs.length} processes; steps of ${STEP_SECONDS} s\n`);
    // Let every node's hello reach the relay.
    await new Promise((r) => setTimeout(r, 1500));

    const steps: Step[] = [];
    for (const rate of RATES) {
      const sender = await warmSender<{ results: Array<[number, number, number]>; cpuMs: number }>({ url: `${relay.url}/webhook/bench/generic/bench`, rate, seconds: STEP_SECONDS, warmSeconds: 1 }, children);
      // Let the warm-up's runs finish, so the step counts only its own.
      await settle(orchPool, 10_000);
      const pids: Record<string, number | undefined> = { relay: relay.child.pid, ...Object.fromEntries(orchs.map((o, i) => [`orchestrator ${i}`, o.child.pid])), ...Object.fromEntries(agentProcs.map((a, i) => [`agents ${i}`, a.pid])) };
      const cpuBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
      const pgBefore = backendCpu([relayDb, orchDb]);
      const dbBefore = { orchestrator: await dbCounters(stats, orchDb), relay: await dbCounters(stats, relayDb) };
      const since = String(((await orchPool.one(sql.unsafe`select clock_timestamp()::text as at`)) as { at: string }).at);
      const { results, cpuMs: senderMs } = await sender.go();
      const sentEnd = performance.now();
      const done = await settle(orchPool, 5_000);
      const cpu: Record<string, number> = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid) - cpuBefore[k]!]));
      cpu['webhook sender'] = senderMs / 1000;
      cpu['PostgreSQL (these databases\' backends)'] = backendCpu([relayDb, orchDb]) - pgBefore;
      const db = { orchestrator: diff(await dbCounters(stats, orchDb), dbBefore.orchestrator), relay: diff(await dbCounters(stats, relayDb), dbBefore.relay) };
      const rows = (await orchPool.any(sql.unsafe`
        select extract(epoch from (j.dispatched_at - j.queued_at)) * 1000 as ms, j.status, extract(epoch from (j.finished_at - ${since}::timestamptz)) as fin,
               extract(epoch from (r.created_at - ${since}::timestamptz)) as created
          from runs r join jobs j on j.run_id = r.id where r.created_at >= ${since}::timestamptz`)) as Array<{ ms: number | null; status: string; fin: number | null; created: number }>;
      const latencies = rows.filter((r) => r.ms !== null).map((r) => Number(r.ms)).sort((a, b) => a - b);
      const completed = rows.filter((r) => r.status === 'completed');
      const lastCreated = Math.max(...rows.map((r) => Number(r.created)), 1e-3);
      const lastFinished = Math.max(...completed.map((r) => Number(r.fin)), 1e-3);
      const refused = results.filter(([, , status]) => status !== 200).length;
      const statuses: Record<string, number> = {};
      for (const [, , status] of results) statuses[status] = (statuses[status] ?? 0) + 1;
      const step: Step = {
        rate, sent: results.length, refused, runs: rows.length, completed: completed.length, p50: percentile(latencies, 50), p99: percentile(latencies, 99),
        createdPerSecond: rows.length / lastCreated, completedPerSecond: completed.length / lastFinished,
        sustained: false, cpu, db,
      };
      step.sustained = done && refused === 0 && step.runs === step.sent && step.completed === step.runs && step.p99 < 1000;
      steps.push(step);
      process.stdout.write(
        `offered ${String(rate).padStart(4)}/s: ${step.sent} webhooks (${refused === 0 ? 'all 200' : `statuses ${JSON.stringify(statuses)}`}), ${step.runs} runs created at ${step.createdPerSecond.toFixed(0)}/s, ` +
          `${step.completed} jobs completed at ${step.completedPerSecond.toFixed(0)}/s; queued → dispatched p50 ${step.p50.toFixed(0)} ms, p99 ${step.p99.toFixed(0)} ms; ` +
          `drained ${done ? 'within 5 s' : 'NOT within 5 s'} of the last send (${((performance.now() - sentEnd) / 1000).toFixed(1)} s)  ${step.sustained ? 'sustained' : 'NOT sustained'}\n`,
      );
      if (refused > 0) for (const [name, server] of [['relay', relay], ...orchs.map((o, i) => [`orchestrator ${i}`, o] as const)] as const) process.stdout.write(`  ${name}'s last output:\n${server.output().slice(-1500)}\n`);
      if (!step.sustained) break;
    }
    const best = steps.filter((s) => s.sustained).at(-1);
    process.stdout.write(`highest sustained rate: ${best === undefined ? 'none of the steps' : `${best.rate} runs/s (created ${best.createdPerSecond.toFixed(0)}/s)`}  (target >= 100: ${best !== undefined && best.rate >= 100 ? 'OK' : 'MISS'})\n`);
    const shown = steps.at(-1);
    if (shown !== undefined) {
      const runs = Math.max(1, shown.runs);
      process.stdout.write(`where the time went at ${shown.rate}/s (${shown.sustained ? 'the last sustained step' : 'the first step not sustained'}), CPU per run and in all (${STEP_SECONDS} s step + drain):\n`);
      for (const [name, seconds] of Object.entries(shown.cpu).sort((a, b) => b[1] - a[1])) {
        process.stdout.write(`  ${name.padEnd(40)} ${((1000 * seconds) / runs).toFixed(2).padStart(6)} ms/run  ${seconds.toFixed(1).padStart(5)} s  (${((100 * seconds) / STEP_SECONDS).toFixed(0)} % of a core over the step)\n`);
      }
      for (const [name, c] of Object.entries(shown.db)) {
        process.stdout.write(`  ${name} database per run: ${(c.xact / runs).toFixed(1)} transactions, rows fetched ${(c.fetched / runs).toFixed(1)}, inserted ${(c.inserted / runs).toFixed(1)}, updated ${(c.updated / runs).toFixed(1)}, deleted ${(c.deleted / runs).toFixed(1)}\n`);
      }
      process.stdout.write(statements
        ? '  (pg_stat_statements is loaded: see pg_stat_statements for calls per statement)\n'
        : '  (statements: pg_stat_statements is not in shared_preload_libraries on this server, so transactions are counted instead (pg_stat_database xact_commit + xact_rollback; every statement outside a transaction block is one, so statements >= transactions)\n');
      process.stdout.write(`  RSS: relay ${rssMiB(relay.child.pid).toFixed(0)} MiB, ${orchs.map((o, i) => `orchestrator ${i} ${rssMiB(o.child.pid).toFixed(0)} MiB`).join(', ')}\n`);
    }
  } finally {
    await stats.end().catch(() => undefined);
    await orchPool.end().catch(() => undefined);
    for (const child of children.reverse()) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    }
    for (const name of [relayDb, orchDb]) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    keepOrRemove(dataDir, values['keep-data']);
  }
}

function diff(after: DbCounters, before: DbCounters): DbCounters {
  return { xact: after.xact - before.xact, fetched: after.fetched - before.fetched, inserted: after.inserted - before.inserted, updated: after.updated - before.updated, deleted: after.deleted - before.deleted };
}

/** Waits until no job is queued, dispatched or running (true), or `boundMs` passes (false). */
async function settle(pool: Awaited<ReturnType<typeof createDatabase>>, boundMs: number): Promise<boolean> {
  const end = Date.now() + boundMs;
  for (;;) {
    // A refused connection (a shared server at max_connections) is retried until the bound.
    const open = (await pool.oneFirst(sql.unsafe`select count(*)::int from jobs where status in ('waiting', 'queued', 'dispatched', 'running')`).catch(() => -1)) as number;
    if (open === 0) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

if (values.child !== undefined) {
  const { urls, count, first } = JSON.parse(values.child) as { urls: string[]; count: number; first: number };
  await agentsProcess(urls, count, first);
} else {
  await withMachine(values.busy, 1800, async () => {
    if (values.nodes !== '3') await topology(1);
    if (values.nodes !== '1') await topology(3);
  });
}
