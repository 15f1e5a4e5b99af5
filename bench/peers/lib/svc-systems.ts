// svc beside Buildbot, in its two shipped shapes, both from `dist/`:
// - the production layout: `svc-relay`, `svc-orchestrator` and `svc-agent` as three processes on
//   the system PostgreSQL (two fresh databases), wired with `svc-admin` as an operator does
//   (org, git source, agent token), as test/fixtures/jobs-stack.ts does for the e2e tests;
// - `svc dev`: relay, orchestrator and agent in one process on its embedded PostgreSQL.
// Both are announced the same signed push body the post-receive hook sends (HMAC-SHA256,
// `X-Hub-Signature-256`, the `X-Provider-*` headers). Their timestamps are read from the
// orchestrator's own records (webhook_deliveries, runs, jobs, job_steps), hop histograms from the
// relay's and orchestrator's /metrics, and the agent's set-up phases from its `job set-up
// timings` debug line (production layout only: svc dev logs at info).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { distBin, repoRoot } from '../../lib/machine.ts';
import { git, mibOf, processTree, REPOSITORY, treeDetail, waitFor, type PushCase } from './common.ts';

export interface SvcTimeline {
  received: number;
  runCreated: number;
  queued: number;
  dispatched: number;
  jobRunning: number;
  stepStarted: number;
  stepFinished: number;
  jobFinished: number;
  runFinished: number;
  status: string;
  jobId: string;
}

export interface SvcPeer {
  readonly name: string;
  readonly relayUrl: string;
  readonly orchestratorUrl: string;
  /** Makes the commits of the bench's bare repository visible to this system's git source. */
  sync(): void;
  announce(body: Buffer, deliveryId: string): Promise<number>;
  /** Waits for the run of this delivery to end; its timestamps (ms since the epoch). */
  timeline(deliveryId: string, timeoutMs: number): Promise<SvcTimeline>;
  /** The runs' end times of these deliveries once all have ended. */
  finishedAll(deliveryIds: readonly string[], timeoutMs: number): Promise<number[]>;
  /** Agent set-up phases by job id (production layout only). */
  readonly agentTimings: Map<string, Record<string, number>>;
  /** PSS in MiB of the programs (the process trees they started, PostgreSQL apart). */
  programsMiB(): number;
  /** The same per program (and its children: step runners, the spare runner). */
  programsDetail(): string;
  /** PSS in MiB of PostgreSQL's processes that serve this system, and which ones those are. */
  postgresMiB(): Promise<{ mib: number; note: string }>;
  stop(): Promise<void>;
}

const ADMIN_URL = process.env['SVC_TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';

/** The environment the programs get: ours without any SVC_* variable. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('SVC_') && !k.startsWith('GIT_')) env[k] = v;
  return { ...env, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0' };
}

interface Started {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/** Starts a program as shipped and waits for its `<name> ready <url>` line. */
function startProgram(file: string, args: string[], name: string, env: NodeJS.ProcessEnv, onLine?: (line: string) => void): Promise<Started> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let rest = '';
    let settled = false;
    const timer = setTimeout(() => finish(new Error(`${name} not ready in 120 s: ${out.slice(-3000)}`)), 120_000);
    const finish = (error: Error | null, url?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error !== null) {
        child.kill('SIGKILL');
        reject(error);
      } else resolve({ child, url: url!, output: () => out });
    };
    child.stdout.on('data', (d: Buffer) => {
      const text = d.toString('utf8');
      if (out.length < 100_000) out += text;
      const lines = (rest + text).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        onLine?.(line);
        const m = new RegExp(`^${name} ready (\\S+)`).exec(line);
        if (m !== null) finish(null, m[1]);
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      if (out.length < 100_000) out += d.toString('utf8');
    });
    child.once('exit', (code) => finish(new Error(`${name} exited ${code} before ready: ${out.slice(-3000)}`)));
  });
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

function admin(env: NodeJS.ProcessEnv, args: string[]): Record<string, unknown> {
  const result = spawnSync(process.execPath, [join(repoRoot, 'dist', 'bin', 'svc-admin.js'), ...args, '--json'], { env, encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) throw new Error(`svc-admin ${args.join(' ')}: ${result.stderr}${result.stdout}`);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

function signedPost(url: string, secret: string, sourceId: string, body: Buffer, deliveryId: string): Promise<number> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-provider-event': 'push',
      'x-provider-delivery': deliveryId,
      'x-provider-hook-installation-target-id': sourceId,
      'x-provider-hook-installation-target-type': 'integration',
      'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
    },
    body,
  }).then(async (response) => {
    await response.arrayBuffer();
    return response.status;
  });
}

const TIMELINE_SQL = `
  select extract(epoch from d.received_at) * 1000 as received, extract(epoch from r.created_at) * 1000 as run_created,
         extract(epoch from j.queued_at) * 1000 as queued, extract(epoch from j.dispatched_at) * 1000 as dispatched,
         extract(epoch from j.started_at) * 1000 as job_running, extract(epoch from s.started_at) * 1000 as step_started,
         extract(epoch from s.finished_at) * 1000 as step_finished, extract(epoch from j.finished_at) * 1000 as job_finished,
         extract(epoch from r.finished_at) * 1000 as run_finished, r.status, j.id::text as job_id
  from runs r
  join webhook_deliveries d on d.org_id = r.org_id and d.delivery_id = r.delivery_id
  join jobs j on j.run_id = r.id and j.kind = 'job'
  left join job_steps s on s.job_id = j.id and s.name = 'echo'
  where r.delivery_id = $1 and r.parent_run_id is null`;
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'skipped']);

function timelineReader(client: pg.Client) {
  return {
    async timeline(deliveryId: string, timeoutMs: number): Promise<SvcTimeline> {
      const row = await waitFor(`the run of delivery ${deliveryId}`, async () => {
        const r = (await client.query(TIMELINE_SQL, [deliveryId])).rows[0] as Record<string, string | number | null> | undefined;
        return r !== undefined && TERMINAL.has(String(r['status'])) ? r : undefined;
      }, timeoutMs, 10);
      if (row['status'] !== 'completed') throw new Error(`run of delivery ${deliveryId} ended ${String(row['status'])}`);
      const n = (k: string) => Number(row[k]);
      return {
        received: n('received'), runCreated: n('run_created'), queued: n('queued'), dispatched: n('dispatched'), jobRunning: n('job_running'),
        stepStarted: n('step_started'), stepFinished: n('step_finished'), jobFinished: n('job_finished'), runFinished: n('run_finished'),
        status: String(row['status']), jobId: String(row['job_id']),
      };
    },
    async finishedAll(deliveryIds: readonly string[], timeoutMs: number): Promise<number[]> {
      return waitFor(`${deliveryIds.length} runs to end`, async () => {
        const rows = (await client.query(`select status, extract(epoch from finished_at) * 1000 as finished from runs where delivery_id = any($1) and parent_run_id is null`, [deliveryIds])).rows as Array<{ status: string; finished: number | null }>;
        if (rows.length < deliveryIds.length || rows.some((r) => !TERMINAL.has(r.status))) return undefined;
        const failed = rows.filter((r) => r.status !== 'completed');
        if (failed.length > 0) throw new Error(`${failed.length} runs of the burst did not complete`);
        return rows.map((r) => Number(r.finished));
      }, timeoutMs, 100);
    },
  };
}

/** PSS of the backends serving these databases (the server's shared processes are not counted). */
async function backendsMiB(client: pg.Client, databases: string[]): Promise<number> {
  const pids = (await client.query(`select pid from pg_stat_activity where datname = any($1) and pid <> pg_backend_pid()`, [databases])).rows.map((r: { pid: number }) => r.pid);
  return mibOf(pids);
}

/** The production layout: three programs on fresh databases of the system PostgreSQL. */
export async function startProductionLayout(root: string, bare: string): Promise<SvcPeer> {
  mkdirSync(root, { recursive: true });
  const tag = `svc_peers_${process.pid}_${Date.now().toString(36)}`;
  const [orchDb, relayDb] = [`${tag}_orch`, `${tag}_relay`];
  const adminClient = new pg.Client({ connectionString: ADMIN_URL });
  await adminClient.connect();
  await adminClient.query(`create database ${orchDb}`);
  await adminClient.query(`create database ${relayDb}`);
  const urlOf = (db: string) => Object.assign(new URL(ADMIN_URL), { pathname: `/${db}` }).toString();
  const children: ChildProcess[] = [];
  const cleanup = async () => {
    for (const child of [...children].reverse()) await stopChild(child);
    await adminClient.query(`drop database if exists ${orchDb} with (force)`).catch(() => undefined);
    await adminClient.query(`drop database if exists ${relayDb} with (force)`).catch(() => undefined);
    await adminClient.end().catch(() => undefined);
  };
  try {
    const env = baseEnv();
    const relayEnv = { ...env, SVC_RELAY_DATABASE_URL: urlOf(relayDb), SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: join(root, 'relay') };
    const relay = await startProgram(distBin('svc-relay'), [], 'svc-relay', relayEnv);
    children.push(relay.child);
    const org = admin(relayEnv, ['relay', 'org', 'create', 'acme']);
    const orchEnv = {
      ...env, SVC_DATABASE_URL: urlOf(orchDb), SVC_DATA_DIR: join(root, 'orch'), SVC_SECRET_KEY: randomBytes(32).toString('base64'),
      SVC_SERVER_PORT: '0', SVC_SERVER_HOST: '127.0.0.1', SVC_PLATFORM_URL: relay.url, SVC_PLATFORM_TOKEN: String(org['token']), SVC_INSTANCE_ID: 'peers-bench',
    };
    const source = admin(orchEnv, ['source', 'add', 'git', '--org', 'acme', '--setting', `remoteUrl=file://${bare}`, '--setting', `repository=${REPOSITORY}`]) as { source: { id: string }; secret: string; webhookUrl: string };
    const agentToken = String(admin(orchEnv, ['agent-token', 'create', '--description', 'peers bench'])['token']);
    const orch = await startProgram(distBin('svc-orchestrator'), [], 'svc-orchestrator', orchEnv);
    children.push(orch.child);
    const relayClient = new pg.Client({ connectionString: urlOf(relayDb) });
    await relayClient.connect();
    await waitFor('the relay to route the git source', async () => (await relayClient.query(`select 1 from relay_sources where routing_key = $1`, [`git:${source.source.id}`])).rowCount! > 0, 60_000, 100);
    await relayClient.end();
    const agentTimings = new Map<string, Record<string, number>>();
    const onAgentLine = (line: string) => {
      if (!line.includes('job set-up timings')) return;
      try {
        const entry = JSON.parse(line) as { jobId?: string; timings?: Record<string, number> };
        if (entry.jobId !== undefined && entry.timings !== undefined) agentTimings.set(entry.jobId, entry.timings);
      } catch {
        // not a log line
      }
    };
    const agent = await startProgram(distBin('svc-agent'), [], 'svc-agent', {
      ...env, SVC_ORCHESTRATOR_URL: orch.url, SVC_AGENT_TOKEN: agentToken, SVC_AGENT_LABELS: 'local', SVC_AGENT_SANDBOX: 'process',
      SVC_AGENT_WORK_DIR: join(root, 'agent'), SVC_AGENT_ID: 'peers-agent', SVC_AGENT_LOG_LEVEL: 'debug',
    }, onAgentLine);
    children.push(agent.child);
    const client = new pg.Client({ connectionString: urlOf(orchDb) });
    await client.connect();
    const reader = timelineReader(client);
    return {
      name: 'svc (relay, orchestrator, agent: 3 processes, system PostgreSQL)',
      relayUrl: relay.url,
      orchestratorUrl: orch.url,
      sync: () => undefined,
      announce: (body, deliveryId) => signedPost(source.webhookUrl, source.secret, source.source.id, body, deliveryId),
      timeline: reader.timeline,
      finishedAll: reader.finishedAll,
      agentTimings,
      programsMiB: () => mibOf(processTree(children.map((c) => c.pid!)).programs),
      programsDetail: () => treeDetail([['svc-relay', relay.child.pid!], ['svc-orchestrator', orch.child.pid!], ['svc-agent', agent.child.pid!]]),
      postgresMiB: async () => ({ mib: await backendsMiB(adminClient, [orchDb, relayDb]), note: "the system server's backends of the two databases (its shared processes not counted)" }),
      async stop() {
        await client.end().catch(() => undefined);
        await cleanup();
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** `svc dev` as shipped, on a copy-free repository: its own bare repository, embedded PostgreSQL. */
export async function startSvcDev(root: string, work: string, bare: string): Promise<SvcPeer> {
  const dataDir = join(root, 'svc-dev');
  let ready: Record<string, unknown> | undefined;
  const dev = await new Promise<ChildProcess>((resolve, reject) => {
    const child = spawn(process.execPath, [join(repoRoot, 'dist', 'bin', 'svc.js'), 'dev', '--repo', work, '--data-dir', dataDir, '--port', '0', '--relay-port', '0', '--json'], { env: baseEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let rest = '';
    let err = '';
    const timer = setTimeout(() => (child.kill('SIGKILL'), reject(new Error(`svc dev not ready in 180 s: ${err.slice(-2000)}`))), 180_000);
    child.stdout.on('data', (d: Buffer) => {
      const lines = (rest + d.toString('utf8')).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines) {
        if (ready !== undefined || !line.includes('"ready"')) continue;
        const event = JSON.parse(line) as Record<string, unknown>;
        if (event['event'] === 'ready') (ready = event, clearTimeout(timer), resolve(child));
      }
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`svc dev exited ${code}: ${err.slice(-2000)}`))));
  });
  const r = ready!;
  const devBare = String((r['remote'] as { url: string }).url);
  const state = JSON.parse(readFileSync(join(dataDir, 'dev', 'state.json'), 'utf8')) as { sources: Record<string, string> };
  const sourceId = Object.values(state.sources)[0]!;
  const secret = readFileSync(join(dataDir, 'dev', 'hook.secret'), 'utf8').trim();
  const credentials = JSON.parse(readFileSync(join(dataDir, 'postgres.json'), 'utf8')) as { user: string; password: string };
  const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(pidFile)) throw new Error(`svc dev's embedded PostgreSQL has no ${pidFile}`);
  const [postmaster, , , port] = readFileSync(pidFile, 'utf8').split('\n');
  const client = new pg.Client({ host: '127.0.0.1', port: Number(port), user: credentials.user, password: credentials.password, database: 'svc' });
  await client.connect();
  const reader = timelineReader(client);
  return {
    name: 'svc dev (one process, embedded PostgreSQL)',
    relayUrl: String(r['relayUrl']),
    orchestratorUrl: String(r['orchestratorUrl']),
    // Fetching into a bare repository runs no hook: the bench announces the push itself.
    sync: () => void git(devBare, ['fetch', '--quiet', '--force', bare, '+refs/heads/*:refs/heads/*']),
    announce: (body, deliveryId) => signedPost(String(r['webhookUrl']), secret, sourceId, body, deliveryId),
    timeline: reader.timeline,
    finishedAll: reader.finishedAll,
    agentTimings: new Map(),
    programsMiB: () => mibOf(processTree([dev.pid!]).programs),
    programsDetail: () => treeDetail([['svc dev (the command; its child runs the three roles)', dev.pid!]]),
    postgresMiB: async () => ({ mib: mibOf(processTree([Number(postmaster)]).postgres), note: 'the embedded server, all its processes' }),
    async stop() {
      await client.end().catch(() => undefined);
      await stopChild(dev, 'SIGINT');
    },
  };
}
