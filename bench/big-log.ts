// A big log with masking on: one step prints N lines (default 1,000,000), every tenth carrying a
// registered secret (ctx.setSecretOutput: the runner masks it before a line leaves the job).
// The stack is `svc dev` as shipped (dist/bin/svc.js: relay, orchestrator and agent in one
// process on its embedded PostgreSQL; the step in the agent's runner child process). Measures:
//   stored    lines reaching the orchestrator's store (job_logs rows, polled every 250 ms through
//             the embedded PostgreSQL, counted by row as they commit);
//   live      lines reaching the dashboard's live view: a real Server-Sent Events client of the
//             relay's `GET /ui/orgs/dev/runs/:run/logs/stream`, authenticated with the dev PAT,
//             counting `lines` events as they arrive (and checking no line holds the secret);
// lines per second of each (first line → last line, and over the whole step), and the peak RSS
// (VmHWM) of every process of the stack (svc dev, its server process, the runner, PostgreSQL's
// processes summed) and of this SSE client.
//   node bench/big-log.ts [--lines N=1000000] [--busy] [--keep-data]
// `npm run build` first.
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { keepOrRemove, repoRoot, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    lines: { type: 'string', default: '1000000' },
    busy: { type: 'boolean', default: false },
    'keep-data': { type: 'boolean', default: false },
  },
});
const LINES = Math.max(1000, Math.min(10_000_000, Number(values.lines)));
const SECRET = 'bench-secret-7f3a9c2e51d84b60';
const SVC = path.join(repoRoot, 'dist', 'bin', 'svc.js');

function workflowSource(): string {
  // Printed in chunks of 10,000 lines so the runner's pipe, not one huge string, carries it.
  return `import { job, push, workflow } from 'svc/sdk';
export default workflow('big-log', {
  on: push({ branches: ['main'] }),
  jobs: {
    print: job({
      runsOn: ['local'],
      steps: (s) =>
        s.step('print', async (ctx) => {
          await ctx.setSecretOutput('token', ${JSON.stringify(SECRET)});
          for (let start = 1; start <= ${LINES}; start += 10000) {
            const chunk: string[] = [];
            for (let i = start; i < start + 10000 && i <= ${LINES}; i++) {
              chunk.push(i % 10 === 0 ? 'line ' + i + ' token=${SECRET} done' : 'line ' + i + ' compiling module ' + (i % 977) + ' of the bench project');
            }
            await new Promise<void>((resolve) => (process.stdout.write(chunk.join('\\n') + '\\n') ? resolve() : process.stdout.once('drain', () => resolve())));
          }
        }),
    }),
  },
});
`;
}

interface DevEvent {
  event: string;
  [key: string]: unknown;
}

/** Peak RSS (VmHWM, MiB) of every process seen under `root`, by a name for its role. */
class PeakRss {
  readonly peaks = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private readonly root: number;

  constructor(root: number) {
    this.root = root;
    this.timer = setInterval(() => void this.sample(), 200);
  }

  async sample(): Promise<void> {
    const children = new Map<number, number[]>();
    const info = new Map<number, { name: string; hwm: number; rss: number }>();
    for (const entry of await readdir('/proc').catch(() => [])) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const status = await readFile(`/proc/${entry}/status`, 'utf8');
        const ppid = Number(/PPid:\s+(\d+)/.exec(status)?.[1]);
        const cmd = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0').filter(Boolean);
        const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
        const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
        info.set(Number(entry), { name: roleOf(cmd), hwm, rss });
        children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
      } catch {
        // ended meanwhile
      }
    }
    let postgres = 0;
    const visit = (pid: number, depth: number) => {
      const me = info.get(pid);
      if (me !== undefined) {
        if (me.name === 'postgres') postgres += me.rss;
        else {
          // The command itself, then its server process (same bin, one level down); others by role.
          const name = depth === 0 ? 'svc dev (the command)' : depth === 1 && me.name === 'svc dev' ? 'svc dev server (relay + orchestrator + agent)' : me.name;
          if (name !== 'other') this.peaks.set(name, Math.max(this.peaks.get(name) ?? 0, me.hwm));
        }
      }
      for (const child of children.get(pid) ?? []) visit(child, depth + 1);
    };
    visit(this.root, 0);
    // PostgreSQL's processes share memory: their RSS summed overstates it (shared buffers count in each).
    const pgName = 'PostgreSQL (RSS of its processes summed, shared buffers counted in each)';
    this.peaks.set(pgName, Math.max(this.peaks.get(pgName) ?? 0, postgres));
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

function roleOf(cmd: string[]): string {
  const text = cmd.join(' ');
  if (/postgres/.test(cmd[0] ?? '')) return 'postgres';
  if (/svc\.js dev/.test(text)) return 'svc dev';
  if (/runner/.test(text)) return 'the step\'s runner (largest)';
  return 'other';
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-big-log-'));
  const example = path.join(root, 'example');
  await cp(path.join(repoRoot, 'examples', 'quickstart'), example, { recursive: true });
  await rm(path.join(example, '.git'), { recursive: true, force: true });
  await rm(path.join(example, '.svc', 'svc.lock.json'), { force: true });
  for (const f of await readdir(path.join(example, '.svc', 'workflows'))) await rm(path.join(example, '.svc', 'workflows', f));
  await writeFile(path.join(example, '.svc', 'workflows', 'big-log.ts'), workflowSource());
  const dataDir = path.join(root, 'data');
  const events: DevEvent[] = [];
  let stderr = '';
  const dev: ChildProcess = spawn(process.execPath, [SVC, 'dev', '--json', '--example', example, '--data-dir', dataDir, '--port', '0', '--relay-port', '0', '--push'], {
    cwd: root,
    env: { ...process.env, GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@example.com' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buffered = '';
  dev.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString();
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl).trim();
      buffered = buffered.slice(nl + 1);
      if (line.startsWith('{')) events.push(JSON.parse(line) as DevEvent);
    }
  });
  dev.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  const peaks = new PeakRss(dev.pid!);
  let client: pg.Client | undefined;
  const waitEvent = async (what: string, match: (e: DevEvent) => boolean, timeoutMs = 300_000): Promise<DevEvent> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = events.find(match);
      if (found !== undefined) return found;
      if (dev.exitCode !== null) throw new Error(`svc dev exited before ${what}: ${stderr}`);
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; stderr: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  try {
    const ready = await waitEvent('ready', (e) => e.event === 'ready');
    const relayUrl = String(ready['relayUrl']);
    const pat = /SVC_TOKEN='([^']+)'/.exec(await readFile(String(ready['cliEnvFile']), 'utf8'))![1]!;
    const runId = String((await waitEvent('the big-log run', (e) => e.event === 'run' && e['workflow'] === 'big-log'))['runId']);
    const state = JSON.parse(await readFile(path.join(dataDir, 'postgres.json'), 'utf8')) as { user: string; password: string };
    const port = Number((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[3]);
    client = new pg.Client({ host: '127.0.0.1', port, user: state.user, password: state.password, database: 'svc' });
    await client.connect();

    const began = performance.now();
    const live = followLive(`${relayUrl}/ui/orgs/dev/runs/${encodeURIComponent(runId)}/logs/stream`, pat);
    const stored = await followStored(client, runId, live.done);
    const seen = await live.done;
    await peaks.sample();
    const step = (await client.query<{ s: number }>(
      `select extract(epoch from (max(s.finished_at) - min(s.started_at)))::float8 as s from job_steps s join jobs j on j.id = s.job_id where j.run_id = $1 and s.name = 'print'`,
      [runId],
    ).catch(() => ({ rows: [{ s: NaN }] }))).rows[0]?.s ?? NaN;
    const outcome = (await client.query<{ status: string; reason: string | null }>(`select status, reason from jobs where run_id = $1`, [runId])).rows.map((r) => `${r.status}${r.reason ? ` (${r.reason.slice(0, 300)})` : ''}`).join(', ');
    const rate = (n: number, from: number, to: number) => `${Math.round(n / ((to - from) / 1000)).toLocaleString('en')} lines/s`;
    process.stdout.write(
      [
        `log: ${LINES.toLocaleString('en')} lines printed by one step (every tenth with a registered secret), run ${runId}; step ${Number.isFinite(step) ? `${step.toFixed(1)} s` : 'duration n/a'} by its own record`,
        `the job: ${outcome}`,
        `stored at the orchestrator: ${stored.lines.toLocaleString('en')} lines in ${stored.rows.toLocaleString('en')} rows; first → last ${rate(stored.lines, stored.first, stored.last)} (${((stored.last - stored.first) / 1000).toFixed(1)} s), from the bench's start ${rate(stored.lines, began, stored.last)}`,
        `live view (SSE client of the relay): ${seen.lines.toLocaleString('en')} lines in ${seen.events.toLocaleString('en')} events; first → last ${rate(seen.lines, seen.first, seen.last)} (${((seen.last - seen.first) / 1000).toFixed(1)} s), last line ${((seen.last - stored.last) / 1000).toFixed(2)} s after it was stored`,
        `masking: ${seen.masked.toLocaleString('en')} lines carried *** where the secret was, ${seen.leaked} held the secret in plain (expected ${Math.floor(LINES / 10).toLocaleString('en')} and 0)`,
        'peak RSS (VmHWM) per process:',
        ...[...peaks.peaks].map(([name, mib]) => `  ${name}: ${mib.toFixed(0)} MiB`),
        `  this bench (the SSE client and the poller): ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
        '',
      ].join('\n'),
    );
  } finally {
    peaks.stop();
    await client?.end().catch(() => undefined);
    if (dev.exitCode === null && dev.signalCode === null) {
      const exited = new Promise((r) => dev.once('exit', r));
      dev.kill('SIGINT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
      if (dev.exitCode === null && dev.signalCode === null) dev.kill('SIGKILL');
    }
    keepOrRemove(root, values['keep-data']);
  }
}

interface Seen {
  lines: number;
  events: number;
  masked: number;
  leaked: number;
  first: number;
  last: number;
}

/** A Server-Sent Events client of the log stream; resolves at the stream's `end` event. */
function followLive(url: string, token: string): { done: Promise<Seen> } {
  const seen: Seen = { lines: 0, events: 0, masked: 0, leaked: 0, first: NaN, last: NaN };
  const done = (async () => {
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: AbortSignal.timeout(3_600_000) });
    if (!response.ok || response.body === null) throw new Error(`log stream: HTTP ${response.status} ${await response.text()}`);
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event === 'end') return seen;
        if (event === 'problem') throw new Error(`log stream problem: ${data}`);
        if (event !== 'lines' || data === undefined) continue;
        const lines = JSON.parse(data) as [string, string, string, string][];
        const now = performance.now();
        if (Number.isNaN(seen.first)) seen.first = now;
        seen.last = now;
        seen.events += 1;
        for (const [, , , text] of lines) {
          if (!text.startsWith('line ')) continue;
          seen.lines += 1;
          if (text.includes(SECRET)) seen.leaked += 1;
          else if (text.includes('***')) seen.masked += 1;
        }
      }
    }
    throw new Error(`log stream ended without its end event after ${seen.lines} lines`);
  })();
  return { done };
}

/** Counts the run's stored log lines as their rows commit, until all LINES are there or the live stream ends. */
async function followStored(client: pg.Client, runId: string, liveDone: Promise<unknown>): Promise<{ lines: number; rows: number; first: number; last: number }> {
  let over = false;
  void liveDone.then(() => (over = true), () => (over = true));
  const out = { lines: 0, rows: 0, first: NaN, last: NaN };
  const after = new Map<string, number>();
  const deadline = Date.now() + 3_600_000;
  while (Date.now() < deadline) {
    const { rows } = await client.query<{ job_id: string; seq: number; n: number; printed: number }>(
      `select l.job_id::text, max(l.seq) as seq, count(*)::int as n,
              coalesce(sum((select count(*) from jsonb_array_elements(l.lines) e where e->>'text' like 'line %')), 0)::int as printed
         from job_logs l join jobs j on j.id = l.job_id
        where j.run_id = $1 and l.seq > coalesce(($2::jsonb ->> l.job_id::text)::int, -1)
        group by l.job_id`,
      [runId, JSON.stringify(Object.fromEntries(after))],
    );
    const now = performance.now();
    for (const row of rows) {
      after.set(row.job_id, row.seq);
      out.rows += row.n;
      if (row.printed > 0) {
        if (Number.isNaN(out.first)) out.first = now;
        out.last = now;
        out.lines += row.printed;
      }
    }
    if (out.lines >= LINES || (over && rows.length === 0)) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  return out;
}

await withMachine(values.busy, 3600, main);
