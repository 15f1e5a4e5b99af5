// Relay ingest benchmark: webhooks/s the relay accepts end to end (HTTP in → webhook.deliver →
// a fake orchestrator acks `accepted` at once → 200), and arrival→ack latency at a steady
// 200/s. The relay runs as its own process (bin/svc-relay.ts) on a fresh database of the
// system PostgreSQL (SVC_TEST_DATABASE_URL); load and the orchestrator link run here. The relay is
// the compiled program (dist/, `npm run build` first); --busy adds a background CPU load.
// Bounded, loopback only, stops by itself:  node bench/relay-ingest.ts [--requests N] [--rounds R]
// Targets: >= 1,000 webhooks/s; at 200/s p50 <= 5 ms, p99 <= 25 ms.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { Pool } from 'undici';
import { connectRelay } from '../kernel/orchestrator/relay-link/index.ts';
import { migrateRelay, provisionOrg } from '../kernel/relay/index.ts';
import { createDatabase } from '../kernel/services/db/index.ts';
import { distBin, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '32' },
    'steady-seconds': { type: 'string', default: '10' },
    rate: { type: 'string', default: '200' },
    busy: { type: 'boolean', default: false },
  },
});
const REQUESTS = Math.min(200_000, Number(values.requests));
const ROUNDS = Math.min(10, Number(values.rounds));
const CONCURRENCY = Math.min(256, Number(values.concurrency));
const STEADY_SECONDS = Math.min(120, Number(values['steady-seconds']));
const RATE = Math.min(5_000, Number(values.rate));

const logger = pino({ level: 'silent' });
const serverUrl = process.env['SVC_TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';

async function admin(sqlText: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sqlText);
  } finally {
    await client.end();
  }
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const median = (xs: number[]) => quantile([...xs].sort((a, b) => a - b), 0.5);

// A push-sized payload (~6 KB), unique per request so the relay's body dedup never fires.
const filler = randomBytes(2200).toString('hex');
let seq = 0;
function body(): string {
  seq += 1;
  return JSON.stringify({ ref: 'refs/heads/main', seq, after: randomBytes(20).toString('hex'), repository: { full_name: 'acme/app' }, filler });
}

async function main(): Promise<void> {
  const dbName = `svc_bench_relay_${process.pid}`;
  await admin(`create database ${dbName}`);
  const dbUrl = new URL(serverUrl);
  dbUrl.pathname = `/${dbName}`;
  let child: ChildProcess | undefined;
  let link: ReturnType<typeof connectRelay> | undefined;
  let http: Pool | undefined;
  try {
    const pool = await createDatabase({ url: dbUrl.toString(), logger });
    await migrateRelay(pool, logger);
    const { token } = await provisionOrg(pool, 'bench');
    await pool.end();

    child = spawn(process.execPath, [distBin('svc-relay')], {
      env: {
        ...process.env,
        SVC_RELAY_DATABASE_URL: dbUrl.toString(),
        SVC_RELAY_PORT: '0',
        SVC_RELAY_HOST: '127.0.0.1',
        SVC_SERVER_LOG_LEVEL: 'warn',
        SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '100000000',
        SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '100000000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const relayUrl = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error('relay did not start')), 30_000);
      child!.stdout!.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /svc-relay ready (\S+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child!.on('exit', (code) => reject(new Error(`relay exited ${code}`)));
    });

    link = connectRelay({
      platformUrl: relayUrl,
      platformToken: token,
      orchestratorId: 'bench',
      sources: () => [{ routingKey: 'github:1', providerKind: 'github' }],
      onDelivery: async () => ({ result: 'accepted' }),
      logger,
    });
    await link.waitConnected(10_000);
    http = new Pool(relayUrl, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });

    const send = async (): Promise<number> => {
      const res = await http!.request({
        path: '/webhook/bench/github',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-github-hook-installation-target-id': '1', 'x-github-event': 'push', 'x-github-delivery': `b-${seq + 1}` },
        body: body(),
      });
      await res.body.text();
      return res.statusCode;
    };

    // Warm-up.
    for (let i = 0; i < 500; i++) await send();

    // 1. Throughput: REQUESTS webhooks with CONCURRENCY in flight, ROUNDS times.
    const rates: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      let next = 0;
      let failures = 0;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < REQUESTS) {
            next += 1;
            if ((await send()) !== 200) failures += 1;
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      rates.push(REQUESTS / seconds);
      process.stdout.write(`throughput round ${round + 1}: ${Math.round(REQUESTS / seconds)} webhooks/s (${failures} non-200), relay RSS ${rssMb(child.pid!)} MB\n`);
    }

    // 2. Latency at a steady RATE/s for STEADY_SECONDS.
    const total = RATE * STEADY_SECONDS;
    const latencies: number[] = [];
    let failures = 0;
    const t0 = performance.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < total; i++) {
      const due = t0 + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const sent = performance.now();
      pending.push(
        send().then((status) => {
          latencies.push(performance.now() - sent);
          if (status !== 200) failures += 1;
        }),
      );
    }
    await Promise.all(pending);
    latencies.sort((a, b) => a - b);
    const p50 = quantile(latencies, 0.5);
    const p99 = quantile(latencies, 0.99);
    const throughput = median(rates);
    const metricsText = await (await fetch(`${relayUrl}/metrics`)).text();
    const heapUsedMb = Math.round(Number(/^nodejs_heap_size_used_bytes (\S+)/m.exec(metricsText)?.[1] ?? 0) / 1024 / 1024);
    process.stdout.write(
      [
        '',
        `relay ingest (accept path, ${CONCURRENCY} connections, ~6 KB bodies)`,
        `  throughput median of ${ROUNDS}: ${Math.round(throughput)} webhooks/s  (target >= 1000)  ${throughput >= 1000 ? 'OK' : 'MISS'}`,
        `  steady ${RATE}/s for ${STEADY_SECONDS} s: p50 ${p50.toFixed(2)} ms (target <= 5)  p99 ${p99.toFixed(2)} ms (target <= 25)  ${p50 <= 5 && p99 <= 25 ? 'OK' : 'MISS'}  (${failures} non-200)`,
        `  tail: p90 ${quantile(latencies, 0.9).toFixed(2)} ms, p95 ${quantile(latencies, 0.95).toFixed(2)} ms, max ${latencies.at(-1)?.toFixed(2)} ms, ${latencies.filter((l) => l > 25).length} of ${latencies.length} over 25 ms`,
        `  machine: ${os.cpus().length} cores, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} (other work on the machine shows up in the tail)`,
        `  RSS: relay ${rssMb(child.pid!)} MB (live JS heap ${heapUsedMb} MB), bench process (load + orchestrator link) ${Math.round(process.memoryUsage().rss / 1024 / 1024)} MB`,
        '',
      ].join('\n'),
    );
  } finally {
    await http?.close().catch(() => undefined);
    await link?.close().catch(() => undefined);
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    await admin(`drop database if exists ${dbName} with (force)`).catch(() => undefined);
  }
}

await withMachine(values.busy, 300, main);
