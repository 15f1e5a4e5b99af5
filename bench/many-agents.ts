// Many idle agents on one orchestrator: the compiled svc-orchestrator (dist/) on a fresh database
// of the system PostgreSQL (SVC_TEST_DATABASE_URL), and N agents (default 5,000) connected from a
// SEPARATE child process speaking the real agent protocol (agent.register, a WebSocket ping at
// the agent's real 30 s interval, answering job.dispatch with job.status running → completed).
// Prints the orchestrator's RSS, its CPU while idle with 1 and with N connected (% of one core,
// from /proc/<pid>/stat over a window covering several heartbeat rounds), and queued → dispatched
// latency for jobs dispatched one at a time with 1 agent connected and then with N.
// Bounded, loopback only, stops by itself:
//   node bench/many-agents.ts [--agents N] [--jobs J] [--idle-seconds S] [--agents-per-process K] [--busy]
// The agents come from ceil(N / K) processes (K = 5,000): each socket is a descriptor on both sides.
// --busy: a background CPU load (stress-ng --cpu 1 --cpu-load 50) during the measurement.
// Targets: RSS <= 1 GB, idle CPU <= 5 % of one core, dispatch latency with N as with 1.
// `npm run build` first.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import WebSocket from 'ws';
import { AGENT_SDK_VERSION } from '../agent/agent.ts';
import { HEARTBEAT_MS } from '../agent/connection.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../kernel/orchestrator/app.ts';
import { notifyJobsQueued } from '../kernel/orchestrator/dispatch/index.ts';
import { createRun } from '../kernel/orchestrator/runs/create.ts';
import { createDatabase, migrate, sql, type DatabasePool } from '../kernel/services/db/index.ts';
import { PROTOCOL_VERSION } from '../schemas/wire/relay.ts';
import { buildLock } from '../workflow/lock/lock-file.ts';
import { job, trig, workflow } from '../test/fixtures/locks.ts';
import { cpuSeconds, distBin, percentile, rssMiB, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '5000' },
    jobs: { type: 'string', default: '30' },
    'idle-seconds': { type: 'string', default: '45' },
    busy: { type: 'boolean', default: false },
    // Internal: this file run as the agents' process.
    child: { type: 'string' },
    'child-index': { type: 'string', default: '0' },
    'agents-per-process': { type: 'string', default: '5000' },
  },
});

// ---------------------------------------------------------------- the agents' process
interface ChildCommand {
  connect: number;
}

async function agentsProcess(connectUrl: string, processIndex: number): Promise<void> {
  const sockets: WebSocket[] = [];
  let refused = 0;
  const open = (index: number) =>
    new Promise<void>((resolve) => {
      const ws = new WebSocket(connectUrl, { perMessageDeflate: false });
      let alive = true;
      let heartbeat: NodeJS.Timeout | undefined;
      ws.on('open', () => {
        ws.send(JSON.stringify({
          type: 'agent.register', protocolVersion: PROTOCOL_VERSION, agentId: `bench-agent-${processIndex}-${index}`, labels: ['linux', 'bench'], os: 'linux', arch: 'x64',
          ephemeral: false, sandboxes: ['process'], sdkVersion: AGENT_SDK_VERSION, inFlightJobs: [],
        }));
        // The agent's own keep-alive: a ping every HEARTBEAT_MS (the orchestrator pings too).
        heartbeat = setInterval(() => {
          if (!alive) return;
          alive = false;
          ws.ping();
        }, HEARTBEAT_MS);
      });
      ws.on('pong', () => (alive = true));
      ws.on('message', (data) => {
        alive = true;
        const message = JSON.parse(data.toString()) as { type: string; jobId?: string };
        if (message.type === 'agent.registered') resolve();
        if (message.type === 'job.dispatch' && message.jobId !== undefined) {
          const at = new Date().toISOString();
          ws.send(JSON.stringify({ type: 'job.status', jobId: message.jobId, status: 'running', steps: [], startedAt: at }));
          ws.send(JSON.stringify({ type: 'job.status', jobId: message.jobId, status: 'completed', steps: [], startedAt: at, finishedAt: new Date().toISOString() }));
        }
      });
      ws.on('close', () => {
        if (heartbeat !== undefined) clearInterval(heartbeat);
        resolve();
      });
      ws.on('error', () => {
        refused += 1;
        resolve();
      });
      sockets.push(ws);
    });
  process.on('message', (command: ChildCommand) => {
    void (async () => {
      const from = sockets.length;
      // A bounded number of handshakes in flight: registration writes one row each.
      const batch = 50;
      for (let i = from; i < from + command.connect; i += batch) {
        await Promise.all(Array.from({ length: Math.min(batch, from + command.connect - i) }, (_, k) => open(i + k)));
      }
      const openCount = sockets.filter((s) => s.readyState === WebSocket.OPEN).length;
      process.send!({ open: openCount, refused, rssMiB: process.memoryUsage().rss / 1048576 });
    })();
  });
  process.send!({ ready: true });
}

// ---------------------------------------------------------------- the bench
const AGENTS = Math.max(1, Math.min(20_000, Number(values.agents)));
const JOBS = Math.max(1, Math.min(500, Number(values.jobs)));
const IDLE_SECONDS = Math.max(5, Math.min(120, Number(values['idle-seconds'])));
const logger = pino({ level: 'silent' });
/** Descriptors the bench asks for in its children: 20,000 agents and the orchestrator's own. */
const RAISED_FD_LIMIT = 65_536;
/** Raises the hard limit where allowed (root), then the soft one to the hard one, and execs the program. */
const RAISE_FD_LIMIT = `ulimit -Hn ${RAISED_FD_LIMIT} 2>/dev/null; ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"`;
const serverUrl = process.env['SVC_TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

function startOrchestrator(env: NodeJS.ProcessEnv, children: ChildProcess[]): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    // One descriptor per agent socket: the soft limit goes up to the hard one, and the hard one to
    // RAISED_FD_LIMIT where the bench may raise it (root); `exec` keeps the orchestrator's pid.
    const child = spawn('/bin/sh', ['-c', RAISE_FD_LIMIT, process.execPath, distBin('svc-orchestrator')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`orchestrator not ready: ${out}`)), 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /svc-orchestrator ready (\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
    child.on('exit', (code) => reject(new Error(`orchestrator exited ${code}: ${out.slice(-4000)}`)));
  });
}

interface AgentsChild {
  child: ChildProcess;
  connect: (n: number) => Promise<{ open: number; refused: number; rssMiB: number }>;
}

/** Agents per process: each socket is a descriptor, and a process may hold at most the hard limit. */
const AGENTS_PER_PROCESS = Math.max(1, Number(values['agents-per-process']));

/**
 * The agents' processes (one per AGENTS_PER_PROCESS): `connect(n)` opens n more, spread over
 * them; the answer sums their open sockets and errors and gives the largest RSS.
 */
async function agentsChildren(connectUrl: string, children: ChildProcess[]): Promise<{ count: number; connect: AgentsChild['connect'] }> {
  const all: AgentsChild[] = [];
  for (let i = 0; i < Math.ceil(AGENTS / AGENTS_PER_PROCESS); i += 1) all.push(await agentsChild(connectUrl, i, children));
  let next = 0;
  return {
    count: all.length,
    async connect(n) {
      const share = new Array<number>(all.length).fill(0);
      for (let k = 0; k < n; k += 1) share[(next + k) % all.length]! += 1;
      next = (next + n) % all.length;
      // One process at a time: registrations are bounded per process, and the orchestrator gets them in order.
      let open = 0;
      let refused = 0;
      let rss = 0;
      for (const [i, agents] of all.entries()) {
        const got = await agents.connect(share[i]!);
        open += got.open;
        refused += got.refused;
        rss = Math.max(rss, got.rssMiB);
      }
      return { open, refused, rssMiB: rss };
    },
  };
}

function agentsChild(connectUrl: string, index: number, children: ChildProcess[]): Promise<AgentsChild> {
  // The soft file-descriptor limit is raised to the hard one in a shell before Node starts
  // (Node cannot raise its own); N sockets need N descriptors on each side.
  const self = fileURLToPath(import.meta.url);
  const child = fork(self, ['--child', connectUrl, '--child-index', String(index)], {
    execPath: '/bin/sh',
    execArgv: ['-c', RAISE_FD_LIMIT, process.execPath],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`agents process exited ${code}`)));
    child.once('message', () => {
      resolve({
        child,
        connect: (n) =>
          new Promise((done) => {
            child.once('message', (m) => done(m as { open: number; refused: number; rssMiB: number }));
            child.send({ connect: n } satisfies ChildCommand);
          }),
      });
    });
  });
}

async function dispatchLatencies(pool: DatabasePool, entry: ReturnType<typeof buildLock>['workflows'][number]): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < JOBS; i += 1) {
    const runId = await pool.transaction(async (tx) => {
      const created = await createRun(tx, {
        orgId: 'bench', deliveryKey: `many-${randomBytes(6).toString('hex')}`, sourceId: null, provider: 'github', repository: 'bench/app', workflowRepository: 'bench/app',
        workflowSourceId: null, workflowCloneUrl: 'https://example.invalid/bench/app.git', workflow: entry, workflowSha: 'a'.repeat(40), workflowRef: 'refs/heads/main', sha: 'a'.repeat(40),
        ref: 'refs/heads/main', eventName: 'push', subjectKind: 'ref', actor: 'bench', trustTier: 'trusted', isFork: 'false', headRef: '', headRepository: '',
        lockfileHash: null, event: { provider: 'github', type: 'push', eventName: 'push', ref: 'refs/heads/main', sha: 'a'.repeat(40) } as never, changedFiles: null, workflowModified: false, buildKey: null,
      });
      await notifyJobsQueued(tx);
      return created.runId;
    });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const row = (await pool.maybeOne(sql.unsafe`
        select extract(epoch from (dispatched_at - queued_at)) * 1000 as ms from jobs where run_id = ${runId} and dispatched_at is not null`)) as { ms: number | string } | null;
      if (row !== null) {
        out.push(Number(row.ms));
        break;
      }
      if (Date.now() > deadline) {
        const jobs = await pool.any(sql.unsafe`select name, status, reason, runs_on from jobs where run_id = ${runId}`);
        throw new Error(`job of run ${runId} not dispatched in 30 s: ${JSON.stringify(jobs)}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    // The agent's completion lands before the next job: every job finds a free agent, with 1
    // agent as with N (one job at a time, no queue).
    while (Date.now() < deadline) {
      const done = (await pool.maybeOne(sql.unsafe`select 1 from jobs where run_id = ${runId} and status in ('completed', 'failed', 'cancelled')`)) !== null;
      if (done) break;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  return out.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const children: ChildProcess[] = [];
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const dbName = `svc_bench_agents_${suffix}`;
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-agents-'));
  const dbUrl = new URL(serverUrl);
  dbUrl.pathname = `/${dbName}`;
  await admin(`CREATE DATABASE ${dbName}`);
  let pool: DatabasePool | undefined;
  try {
    pool = await createDatabase({ url: dbUrl.toString(), logger });
    await migrate(pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger });
    const entry = buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('idle-agents', [trig.webhook({ events: ['x'] })], [job('work')])] }).workflows[0]!;
    // A warm source cache (the pointer a build would write), so jobs need no build.
    const pointerDir = path.join(dataDir, 'storage', 'source', 'v2', 'bench');
    mkdirSync(pointerDir, { recursive: true });
    writeFileSync(path.join(pointerDir, `${entry.contentHash}.hash`), 'digest');

    process.stdout.write(`file descriptors: this shell's soft limit ${(await sh('ulimit -n')).trim()}, hard ${(await sh('ulimit -Hn')).trim()}; the orchestrator and the agents' process start with ${(await sh(RAISE_FD_LIMIT.replace('exec "$0" "$@"', 'ulimit -n'))).trim()} (hard raised to ${RAISED_FD_LIMIT} where allowed, soft to hard)\n`);
    const orch = await startOrchestrator({
      ...process.env,
      SVC_DATABASE_URL: dbUrl.toString(),
      SVC_SECRET_KEY: randomBytes(32).toString('base64'),
      SVC_SERVER_PORT: '0',
      SVC_SERVER_HOST: '127.0.0.1',
      SVC_SERVER_LOG_LEVEL: 'warn',
      SVC_DATA_DIR: dataDir,
      SVC_AGENT_AUTH: 'none',
      SVC_INSTANCE_ID: 'bench-orch',
    }, children);
    const connectUrl = `${orch.url.replace(/^http/, 'ws')}/v1/agents/connect`;
    const agents = await agentsChildren(connectUrl, children);

    const first = await agents.connect(1);
    if (first.open !== 1) throw new Error(`the first agent did not connect (${JSON.stringify(first)})`);
    await dispatchLatencies(pool, entry); // warm-up: JIT, pool connections
    const solo = await dispatchLatencies(pool, entry);
    const rssSolo = rssMiB(orch.child.pid);
    // The same idle window with one agent: what the orchestrator's own periodic work costs, so the
    // heartbeat share of the figure with N is the difference.
    const idleSolo = await idleCpuPercent(orch.child.pid);

    const began = performance.now();
    const many = await agents.connect(AGENTS - 1);
    const connectSeconds = (performance.now() - began) / 1000;
    if (many.open !== AGENTS) process.stdout.write(`note: ${many.open} of ${AGENTS} sockets open (${many.refused} errors)\n`);
    // Settle (registration writes), then the idle window.
    await new Promise((r) => setTimeout(r, 3000));
    const idleCpu = await idleCpuPercent(orch.child.pid);
    const rssMany = rssMiB(orch.child.pid);
    const manyLat = await dispatchLatencies(pool, entry);
    const connected = (await pool.oneFirst(sql.unsafe`select count(*)::int from agents where connected`)) as number;

    const line = (xs: number[]) => `p50 ${percentile(xs, 50).toFixed(1)} ms, p90 ${percentile(xs, 90).toFixed(1)} ms, max ${(xs.at(-1) ?? NaN).toFixed(1)} ms`;
    process.stdout.write(
      [
        `agents: ${many.open} open sockets from ${agents.count} separate process(es) (${connected} rows connected), connected in ${connectSeconds.toFixed(1)} s; largest agents' process RSS ${many.rssMiB.toFixed(0)} MiB`,
        `orchestrator RSS: ${rssSolo.toFixed(0)} MiB with 1 agent, ${rssMany.toFixed(0)} MiB with ${many.open}  (target <= 1024 MiB: ${rssMany <= 1024 ? 'OK' : 'MISS'})`,
        `orchestrator CPU idle with ${many.open} agents over ${IDLE_SECONDS} s: ${idleCpu.toFixed(2)} % of one core  (target <= 5 %: ${idleCpu <= 5 ? 'OK' : 'MISS'}); with 1 agent ${idleSolo.toFixed(2)} %`,
        `queued → dispatched, ${JOBS} jobs one at a time: with 1 agent ${line(solo)}; with ${many.open} agents ${line(manyLat)}`,
        '',
      ].join('\n'),
    );
  } finally {
    await pool?.end().catch(() => undefined);
    for (const child of children.reverse()) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    }
    await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The process's CPU over an IDLE_SECONDS window, in % of one core. */
async function idleCpuPercent(pid: number | undefined): Promise<number> {
  const cpu0 = cpuSeconds(pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
  return (100 * (cpuSeconds(pid) - cpu0)) / ((performance.now() - t0) / 1000);
}

function sh(command: string): Promise<string> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('close', () => resolve(out));
  });
}

if (values.child !== undefined) {
  await agentsProcess(values.child, Number(values['child-index']));
} else {
  await withMachine(values.busy, 300, main);
}
