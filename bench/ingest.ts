// Ingest benchmark through real processes: svc-relay and svc-orchestrator (compiled, dist/) on fresh
// databases of the system PostgreSQL (SVC_TEST_DATABASE_URL), a generic source with no
// signature. Measures (1) webhooks/s relay → orchestrator for no-match deliveries (sent from
// --concurrency connections of lib/webhook-sender.ts, a process of its own) and (2) at a
// steady rate, arrival at the relay → job queued and committed: the relay answers only after the
// orchestrator's ack, which follows the commit, so the relay's own request histogram (buckets at
// exactly 25 and 50 ms) gives the share answered within each bound; the sender's round trip and
// the records' queued_at − received_at (which stops at the transaction's start) are printed
// beside it. Bounded, loopback only, stops by itself:
//   node bench/ingest.ts [--requests N] [--concurrency C] [--rate R] [--steady-seconds S] [--busy] [--profile DIR] [--sample-db] [--keep-data] [--tracing [--rounds N] [--burst-seconds S] [--decode-every K] [--control]]
// --tracing: two stacks side by side in one run, tracing off and on (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
// at a local OTLP/HTTP receiver in this process that reads every export and decodes one in
// --decode-every, 25 by default, 1 for all), and --rounds rounds in which both stacks take
// no-match webhooks together for --burst-seconds; the median ratio of the throughputs is the
// figure (target: tracing on within 10 % of off); then one steady phase each.
// --busy: a background CPU load (stress-ng --cpu 1 --cpu-load 50) during the whole measurement.
// --sample-db: during the steady phase, what the database's backends wait for (lib/db-sampler.ts).
// The steady phase also prints each hop at p50/p99 (relay receive → send, send → ack, and in the
// orchestrator receive → commit → ack), from the servers' own histograms, so a regression names
// its hop. `npm run build` first.
// Targets (also --busy): >= 1,000 webhooks/s; at 200/s p50 <= 5 ms, p99 <= 25 ms, p99.9 <= 50 ms.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { migrateRelay, provisionOrg } from '../kernel/relay/index.ts';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../kernel/orchestrator/database.ts';
import { createSource } from '../kernel/orchestrator/sources/store.ts';
import { createDatabase, migrate, sql } from '../kernel/services/db/index.ts';
import { buildLock } from '../workflow/lock/lock-file.ts';
import { job, trig, workflow } from '../test/fixtures/locks.ts';
import { sampleDatabase } from './lib/db-sampler.ts';
import { startOtlpReceiver } from '../test/fixtures/otlp-receiver.ts';
import { warmSender } from './lib/sender-process.ts';
import { bucketQuantile, commandCpuSeconds, cpuSeconds as cpuOf, machineCpuSeconds, machineShare, diskCounters, diskLine, distBin, fileCreateProbe, keepOrRemove, percentile, rssMiB as rssOf, scrapeBuckets, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '32' },
    rate: { type: 'string', default: '200' },
    'steady-seconds': { type: 'string', default: '10' },
    // Write V8 CPU profiles of both bins into this directory (look at the top self-time frames).
    profile: { type: 'string' },
    busy: { type: 'boolean', default: false },
    'sample-db': { type: 'boolean', default: false },
    // Leave the data directory (its path is printed): see keepOrRemove in lib/machine.ts.
    'keep-data': { type: 'boolean', default: false },
    tracing: { type: 'boolean', default: false },
    // --tracing: rounds of both stacks loaded together; the ratios' median is the figure.
    rounds: { type: 'string', default: '10' },
    // --tracing: the receiver decodes the first export request and one in this many after it.
    'decode-every': { type: 'string', default: '25' },
    // --tracing: how long each round loads both stacks together.
    'burst-seconds': { type: 'string', default: '5' },
    // --tracing --control: the "on" stack runs with tracing off too (an A/A run: the method's own spread).
    control: { type: 'boolean', default: false },
  },
});
const REQUESTS = Math.min(100_000, Number(values.requests));
const CONCURRENCY = Math.min(256, Number(values.concurrency));
const RATE = Math.min(2_000, Number(values.rate));
const STEADY_SECONDS = Math.min(60, Number(values['steady-seconds']));
/** The sender's warm-up at the steady rate before the measured phase (not counted). */
const WARM_SECONDS = 2;

const logger = pino({ level: 'silent' });
const serverUrl = process.env['SVC_TEST_DATABASE_URL'] || 'postgres://postgres@127.0.0.1:5432/postgres';
const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
/** Every database made (dropped at the end); each pass of the bench gets its own two. */
const allDbNames: string[] = [];
const children: ChildProcess[] = [];
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'svc-bench-ingest-'));
const PROFILE_DIR = values.profile === undefined ? undefined : path.resolve(values.profile);

async function admin(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

function urlFor(name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

function start(bin: string, name: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const profile = PROFILE_DIR === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${name}.${Date.now()}.cpuprofile`];
    const child = spawn(process.execPath, [...profile, bin], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${name} not ready: ${out}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = new RegExp(`${name} ready (\\S+)`).exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1]! });
      }
    });
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => reject(new Error(`${name} exited ${code}: ${out}`)));
  });
}

const cpuSeconds = (child: ChildProcess) => cpuOf(child.pid);
const rssMiB = (child: ChildProcess) => rssOf(child.pid);
const pct = percentile;


/** A relay and an orchestrator on databases of their own. */
interface Stack {
  relay: { child: ChildProcess; url: string };
  orch: { child: ChildProcess; url: string };
  relayUrl: string;
  orchPool: Awaited<ReturnType<typeof createDatabase>>;
  dbNames: string[];
}

async function startStack(pass: string, otel: NodeJS.ProcessEnv): Promise<Stack> {
  // Once per run: the probe's files stay in the data directory.
  if (allDbNames.length === 0) console.log(fileCreateProbe(dataDir));
  const dbNames = [`svc_bench_relay_${suffix}${pass}`, `svc_bench_orch_${suffix}${pass}`];
  allDbNames.push(...dbNames);
  for (const name of dbNames) await admin(`CREATE DATABASE ${name}`);
  const relayPool = await createDatabase({ url: urlFor(dbNames[0]!), logger });
  await migrateRelay(relayPool, logger);
  const { token } = await provisionOrg(relayPool, 'bench');
  await relayPool.end();

  const masterKey = randomBytes(32);
  const orchPool = await createDatabase({ url: urlFor(dbNames[1]!), logger });
  await migrate(orchPool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger });
  const settings = { signature: { mode: 'none' }, maxPayloadBytes: 65536, rateLimitRpm: 1_000_000, eventType: { payloadField: 'event' }, idempotencyWindowSeconds: 3600 };
  const generic = await createSource(orchPool, masterKey, { orgId: 'bench', providerKind: 'generic', sourceId: 'bench', settings });
  // A registration for event "match" (as a default-branch push would write it).
  const entry = buildLock({ source: '.svc/workflows/*.ts#default', workflows: [workflow('on-match', [trig.webhook({ events: ['match'] })], [job('work')])] }).workflows[0]!;
  await orchPool.query(sql.unsafe`
    insert into registrations (id, org_id, source_id, repository, branch, sha, workflow, trigger_index, trigger_type, event_names, trigger, lock_entry)
    values (${randomUUID()}, 'bench', ${generic.source.id}, 'bench/app', 'main', ${'a'.repeat(40)}, 'on-match', 0, 'webhook', '{match}',
      ${sql.jsonb(entry.triggers[0] as never)}, ${sql.jsonb(entry as never)})`);

  // A warm source cache (the pointer the build would write), so jobs queue at once.
  const pointerDir = path.join(dataDir, `orch${pass}`, 'storage', 'source', 'v2', 'bench');
  mkdirSync(pointerDir, { recursive: true });
  writeFileSync(path.join(pointerDir, `${entry.contentHash}.hash`), 'digest');

  // Port 0: the relay prints the address it bound (a random pick could meet a port in use).
  const relay = await start(distBin('svc-relay'), 'svc-relay', { ...process.env, SVC_RELAY_DATABASE_URL: urlFor(dbNames[0]!), SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_SERVER_LOG_LEVEL: 'warn', ...otel, SVC_DATA_DIR: path.join(dataDir, `relay${pass}`), SVC_RELAY_RATE_LIMIT_PER_ORG_RPM: '100000000', SVC_RELAY_RATE_LIMIT_PER_IP_RPM: '100000000' });
  const relayUrl = relay.url;
  const orch = await start(distBin('svc-orchestrator'), 'svc-orchestrator', {
    ...process.env,
    SVC_DATABASE_URL: urlFor(dbNames[1]!),
    SVC_SECRET_KEY: masterKey.toString('base64'),
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_SERVER_LOG_LEVEL: 'warn',
    ...otel,
    SVC_DATA_DIR: path.join(dataDir, `orch${pass}`),
    SVC_PLATFORM_URL: relayUrl,
    SVC_PLATFORM_TOKEN: token,
    SVC_INSTANCE_ID: 'bench-orch',
  });
  // Let the orchestrator's hello register the source at the relay.
  await new Promise((r) => setTimeout(r, 1500));
  return { relay, orch, relayUrl, orchPool, dbNames };
}

/** What one burst of no-match webhooks gave. */
interface Burst {
  throughput: number;
  /** CPU per webhook (ms) of each server and of the sender (the sender's shows how fast the machine ran). */
  relayCpuMs: number;
  orchCpuMs: number;
  senderCpuMs: number;
}

/**
 * (1) throughput, no-match, from a sender process of its own (lib/webhook-sender.ts: node:http,
 * not this process's fetch, whose CPU per request would be taken from the servers measured);
 * then the event-log payload objects, written after the ack, are waited for, so what follows
 * starts from a steady state (how long it took is reported: the object write rate).
 */
async function burst(stack: Stack, requests: number, quiet = false): Promise<Burst> {
  const { relay, orch, relayUrl, orchPool } = stack;
  type BurstAnswer = { statuses: Record<string, number>; seconds: number; cpuMs: number };
  const burstSender = await warmSender<BurstAnswer>({ kind: 'burst', url: `${relayUrl}/webhook/bench/generic/bench`, requests, concurrency: CONCURRENCY }, children);
  const cpu0 = [cpuSeconds(relay.child), cpuSeconds(orch.child)];
  const { statuses, seconds, cpuMs: burstSenderCpuMs } = await burstSender.go();
  const cpu1 = [cpuSeconds(relay.child), cpuSeconds(orch.child)];
  const figures = { throughput: requests / seconds, relayCpuMs: (1000 * (cpu1[0]! - cpu0[0]!)) / requests, orchCpuMs: (1000 * (cpu1[1]! - cpu0[1]!)) / requests, senderCpuMs: burstSenderCpuMs / requests };
  if (!quiet) {
    console.log(`no-match throughput: ${requests} webhooks in ${seconds.toFixed(2)} s = ${(requests / seconds).toFixed(0)}/s (statuses ${JSON.stringify(statuses)})`);
    console.log(`  CPU per webhook: relay ${figures.relayCpuMs.toFixed(3)} ms, orchestrator ${figures.orchCpuMs.toFixed(3)} ms, the webhook sender ${figures.senderCpuMs.toFixed(3)} ms`);
  }
  if (statuses['200'] !== requests) throw new Error(`not every webhook was answered 200: ${JSON.stringify(statuses)}`);
  const drain = await drained(orchPool);
  const cpu2 = cpuSeconds(orch.child);
  if (!quiet) console.log(`  event-log objects confirmed ${drain.seconds.toFixed(1)} s after the last ack (unconfirmed left: ${drain.backlog}); orchestrator CPU per webhook with that drain ${((1000 * (cpu2 - cpu0[1]!)) / requests).toFixed(3)} ms`);
  return figures;
}

/** Waits (up to 60 s) until the event-log payload objects of the deliveries so far are written. */
async function drained(orchPool: Stack['orchPool']): Promise<{ seconds: number; backlog: number }> {
  const drainStart = performance.now();
  let backlog = -1;
  while (performance.now() - drainStart < 60_000) {
    const row = (await orchPool.one(sql.unsafe`select count(*)::int as n from webhook_deliveries where payload_key is not null and payload_omitted`)) as { n: number };
    backlog = row.n;
    if (backlog === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { seconds: (performance.now() - drainStart) / 1000, backlog };
}

/**
 * Both stacks loaded over the same `seconds`, each from a sender of its own with --concurrency
 * connections, started together: whatever the machine does meanwhile (these VMs' speed wanders by
 * tens of per cent within seconds) it does to both. Then both event-log backlogs are awaited.
 */
async function burstTogether(stacks: readonly [Stack, Stack], seconds: number): Promise<[Burst, Burst]> {
  type BurstAnswer = { statuses: Record<string, number>; seconds: number; cpuMs: number };
  const senders = await Promise.all(stacks.map((stack) => warmSender<BurstAnswer>({ kind: 'burst', url: `${stack.relayUrl}/webhook/bench/generic/bench`, requests: 0, seconds, concurrency: CONCURRENCY }, children)));
  const cpu = (stack: Stack) => [cpuSeconds(stack.relay.child), cpuSeconds(stack.orch.child)];
  const cpu0 = stacks.map(cpu);
  const answers = await Promise.all(senders.map(async (sender, i) => ({ answer: await sender.go(), cpu1: cpu(stacks[i]!) })));
  const figures = answers.map(({ answer, cpu1 }, i): Burst => {
    const done = Object.values(answer.statuses).reduce((a, b) => a + b, 0);
    if ((answer.statuses['200'] ?? 0) !== done) throw new Error(`not every webhook was answered 200: ${JSON.stringify(answer.statuses)}`);
    return { throughput: done / answer.seconds, relayCpuMs: (1000 * (cpu1[0]! - cpu0[i]![0]!)) / done, orchCpuMs: (1000 * (cpu1[1]! - cpu0[i]![1]!)) / done, senderCpuMs: answer.cpuMs / done };
  });
  for (const stack of stacks) await drained(stack.orchPool);
  return figures as [Burst, Burst];
}

async function stopStack(stack: Stack): Promise<void> {
  await stack.orchPool.end();
  // The next pass measures its own servers only (SIGTERM: the servers export their last spans).
  for (const child of [stack.relay.child, stack.orch.child]) child.kill('SIGTERM');
  await Promise.all([stack.relay.child, stack.orch.child].map((child) => (child.exitCode === null ? new Promise((r) => child.once('exit', r)) : undefined)));
}

async function main(pass: string, otel: NodeJS.ProcessEnv): Promise<void> {
  const stack = await startStack(pass, otel);
  await burst(stack, REQUESTS);
  await steady(stack);
  await stopStack(stack);
}

/** (2) steady rate, arrival → job queued, with each hop; the round trip's p50 and p99 (ms). */
async function steady(stack: Stack): Promise<{ p50: number; p99: number }> {
  const { relay, orch, relayUrl, orchPool, dbNames } = stack;

  // (2) steady rate, arrival → job queued. The load comes from a process of its own
  // (lib/webhook-sender.ts), so the pauses of this one (pools, kernel modules) never bunch the
  // sends up. It warms up at the same rate first (WARM_SECONDS, not counted: see the sender);
  // every "before" figure is read once it is warm, so only the measured phase is judged.
  const scrape = async (url: string) => (await fetch(`${url}/metrics`)).text();
  const total = RATE * STEADY_SECONDS;
  type SenderAnswer = { results: Array<[number, number, number]>; cpuMs: number };
  const sender = await warmSender<SenderAnswer>({ url: `${relayUrl}/webhook/bench/generic/bench`, rate: RATE, seconds: STEADY_SECONDS, warmSeconds: WARM_SECONDS }, children);
  const hopsBefore = [await scrape(relayUrl), await scrape(orch.url)];
  const sinceRow = (await orchPool.one(sql.unsafe`select now() as at`)) as { at: number };
  const sampler = values['sample-db'] ? await sampleDatabase(serverUrl, dbNames[1]!) : undefined;
  const disk0 = diskCounters();
  const cpuSteady0 = [cpuSeconds(relay.child), cpuSeconds(orch.child)];
  const [pgCpu0, machine0] = [commandCpuSeconds('postgres'), machineCpuSeconds()];
  const t0 = performance.now();
  const startedAt = new Date();
  const { results: sent, cpuMs: senderCpuMs } = await sender.go();
  const roundTrips = sent.map(([, ms]) => ms);
  /** [sent at (ms after the phase began), round trip]: whether the slow ones come together. */
  const slowest: Array<[number, number]> = sent.map(([at, ms]) => [at, ms]);
  const refused = sent.filter(([, , status]) => status !== 200).length;
  if (refused > 0) console.log(`  ${refused} of ${sent.length} steady-phase webhooks were not answered 200`);
  const steadySeconds = (performance.now() - t0) / 1000;
  const disk1 = diskCounters();
  const cpuSteady1 = [cpuSeconds(relay.child), cpuSeconds(orch.child)];
  const [pgCpu1, machine1] = [commandCpuSeconds('postgres'), machineCpuSeconds()];
  const sampled = await sampler?.stop();
  await new Promise((r) => setTimeout(r, 500));
  const hopsAfter = [await scrape(relayUrl), await scrape(orch.url)];
  const rows = (await orchPool.any(sql.unsafe`
    select extract(epoch from (j.queued_at - d.received_at)) * 1000 as ms
    from webhook_deliveries d join runs r on r.id = any(d.run_ids) join jobs j on j.run_id = r.id and j.status = 'queued'
    where d.created_at >= to_timestamp(${sinceRow.at / 1000}) and d.status = 'matched'`)) as Array<{ ms: number }>;
  const census = (await orchPool.any(sql.unsafe`
    select d.status as delivery, j.status as job, count(*)::int as n from webhook_deliveries d
    left join runs r on r.id = any(d.run_ids) left join jobs j on j.run_id = r.id
    where d.created_at >= to_timestamp(${sinceRow.at / 1000}) group by 1, 2`)) as unknown[];
  if (rows.length < total) console.log(`records: ${JSON.stringify(census)}`);
  const ms = rows.map((r) => Number(r.ms)).sort((a, b) => a - b);
  // The target is judged on the sender's round trip: the relay answers 200 only after the
  // orchestrator's ack, which follows the commit, so it spans arrival → job queued AND visible
  // (plus the answer's way back). The records' `queued_at` is the transaction's start, before its
  // statements and commit: printed below, but it would flatter the figure.
  roundTrips.sort((a, b) => a - b);
  // Arrival at the relay → the relay's answer, from the relay's own request histogram, whose
  // buckets include 25 and 50 ms exactly: the share answered within each bound is exact, so
  // "p99 <= 25 ms" is "at least 99 % within 25 ms". This is the target's arrival → queued (and
  // committed: the answer waits for the ack); the sender's round trip below adds the client's
  // side (this bench process, on the same cores).
  const answers = (text: string) => scrapeBuckets(text, 'svc_http_request_duration_seconds', 'route="/webhook/:orgId/generic/:sourceId",status_class="2xx"');
  const [answersBefore, answersAfter] = [answers(hopsBefore[0]!), answers(hopsAfter[0]!)];
  const answeredCount = (answersAfter.get(Infinity) ?? 0) - (answersBefore.get(Infinity) ?? 0);
  const within = (bound: number) => (100 * ((answersAfter.get(bound) ?? 0) - (answersBefore.get(bound) ?? 0))) / answeredCount;
  const relayMiss = within(0.025) < 99 || within(0.05) < 99.9 ? 'MISS' : 'OK';
  console.log(`steady ${RATE}/s for ${STEADY_SECONDS} s: ${ms.length}/${total} queued jobs; arrival at the relay → queued, committed and answered (relay's clock): within 10 ms ${within(0.01).toFixed(2)} %, within 25 ms ${within(0.025).toFixed(2)} %, within 50 ms ${within(0.05).toFixed(2)} % of ${answeredCount}  (target p99 <= 25, p99.9 <= 50, i.e. >= 99 % and >= 99.9 %: ${relayMiss})`);
  const miss = pct(roundTrips, 99) > 25 || pct(roundTrips, 99.9) > 50 ? 'over' : 'within';
  console.log(`  the sender's round trip (request sent → response read, in the sender process): p50 ${pct(roundTrips, 50).toFixed(2)} ms, p90 ${pct(roundTrips, 90).toFixed(2)} ms, p99 ${pct(roundTrips, 99).toFixed(2)} ms, p99.9 ${pct(roundTrips, 99.9).toFixed(2)} ms, max ${(roundTrips.at(-1) ?? NaN).toFixed(2)} ms  (${miss} the target's bounds)`);
  console.log(`  records: relay received_at → jobs.queued_at (the transaction's start, before its statements and commit): p50 ${pct(ms, 50).toFixed(2)} ms, p90 ${pct(ms, 90).toFixed(2)} ms, p99 ${pct(ms, 99).toFixed(2)} ms, p99.9 ${pct(ms, 99.9).toFixed(2)} ms, max ${(ms.at(-1) ?? NaN).toFixed(2)} ms`);
  // Each hop from the servers' own histograms (bucket-interpolated: a guide to which hop, not
  // exact figures). send → ack includes the orchestrator's hops and the socket both ways.
  const hops: Array<[string, number, string, string]> = [
    ['relay receive → send', 0, 'svc_relay_forward_seconds', ''],
    ['relay send → ack', 0, 'svc_relay_ack_seconds', ''],
    ['orchestrator receive → commit', 1, 'svc_orch_relay_delivery_seconds', 'stage="receive_to_commit"'],
    ['orchestrator commit → ack sent', 1, 'svc_orch_relay_delivery_seconds', 'stage="commit_to_ack"'],
  ];
  // Inside the orchestrator's receive → commit: the pipeline's stages (ingest/stage-metrics.ts).
  for (const stage of ['steps', 'one_statement', 'one_statement_aborted', 'connection', 'statements', 'commit', 'batch_wait', 'batch_write']) {
    hops.push([`  ingest stage ${stage}`, 1, 'svc_orch_ingest_stage_seconds', `stage="${stage}"`]);
  }
  for (const [label, server, name, labels] of hops) {
    const before = scrapeBuckets(hopsBefore[server]!, name, labels);
    const after = scrapeBuckets(hopsAfter[server]!, name, labels);
    const q = (x: number) => {
      const seconds = bucketQuantile(before, after, x);
      return Number.isFinite(seconds) ? (1000 * seconds).toFixed(2) : `> ${1000 * Math.max(...[...after.keys()].filter(Number.isFinite))}`;
    };
    const count = (scrapeBuckets(hopsAfter[server]!, name, labels).get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
    if (count > 0) console.log(`  hop ${label.padEnd(32)} p50 ${q(0.5)} ms, p99 ${q(0.99)} ms  (${count})`);
  }
  slowest.sort((a, b) => b[1] - a[1]);
  console.log(`  slowest round trips (sent at +ms: took ms): ${slowest.slice(0, 12).map(([at, ms]) => `+${at.toFixed(0)}: ${ms.toFixed(1)}`).join(', ')}`);
  // Where in the phase the round trips over 25 ms were sent, per second: a burst (one pause, a
  // start-up pass) shows as one full second, queueing for a busy core as a spread.
  const overBySecond = new Array<number>(Math.ceil(STEADY_SECONDS) + 1).fill(0);
  for (const [at, ms] of slowest) if (ms > 25) overBySecond[Math.min(overBySecond.length - 1, Math.floor(at / 1000))]! += 1;
  console.log(`  round trips over 25 ms by second of the phase (began about ${startedAt.toISOString()}, after ${WARM_SECONDS} s of warm-up at the rate): ${overBySecond.join(' ')}`);
  // Garbage-collection pauses during the phase (all kinds), from each server's histogram.
  const gc = (server: number) => {
    const before = scrapeBuckets(hopsBefore[server]!, 'nodejs_gc_duration_seconds');
    const after = scrapeBuckets(hopsAfter[server]!, 'nodejs_gc_duration_seconds');
    const sum = (text: string) => [...text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
    const count = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
    const top = [...after.keys()].filter(Number.isFinite).sort((a, b) => a - b).find((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0) >= count);
    // By kind, with the pauses past 10 ms (major = mark-compact; its marking also runs on
    // helper threads, CPU the other processes wait for): a long one stalls every request in flight.
    const long = ['major', 'minor', 'incremental', 'weakcb']
      .map((kind) => {
        const [b, a] = [scrapeBuckets(hopsBefore[server]!, 'nodejs_gc_duration_seconds', `kind="${kind}"`), scrapeBuckets(hopsAfter[server]!, 'nodejs_gc_duration_seconds', `kind="${kind}"`)];
        const all = (a.get(Infinity) ?? 0) - (b.get(Infinity) ?? 0);
        const n = all - ((a.get(0.01) ?? 0) - (b.get(0.01) ?? 0));
        return all > 0 ? `${kind} ${all}${n > 0 ? ` (${n} over 10 ms)` : ''}` : '';
      })
      .filter((x) => x !== '');
    return `${count} pauses, ${(1000 * (sum(hopsAfter[server]!) - sum(hopsBefore[server]!))).toFixed(1)} ms in all, all under ${top === undefined ? '?' : `${1000 * top} ms`}${long.length > 0 ? ` (${long.join(', ')})` : ''}`;
  };
  console.log(`  GC during the steady phase: relay ${gc(0)}; orchestrator ${gc(1)}`);
  console.log(`  steady phase: CPU relay ${((100 * (cpuSteady1[0]! - cpuSteady0[0]!)) / steadySeconds).toFixed(0)} %, orchestrator ${((100 * (cpuSteady1[1]! - cpuSteady0[1]!)) / steadySeconds).toFixed(0)} %, PostgreSQL ${((100 * (pgCpu1 - pgCpu0)) / steadySeconds).toFixed(0)} %, the webhook sender ${(senderCpuMs / 10 / steadySeconds).toFixed(0)} % of one core; ${machineShare(machine0, machine1)}; disk ${diskLine(disk0, disk1, steadySeconds)}`);
  for (const line of sampled ?? []) console.log(line);
  const lag = (text: string, q: string) => (1000 * Number(new RegExp(`^nodejs_eventloop_lag_${q}_seconds (\\S+)`, 'm').exec(text)?.[1] ?? NaN)).toFixed(1);
  console.log(`  event-loop delay since start (p50/p99): relay ${lag(hopsAfter[0]!, 'p50')}/${lag(hopsAfter[0]!, 'p99')} ms, orchestrator ${lag(hopsAfter[1]!, 'p50')}/${lag(hopsAfter[1]!, 'p99')} ms`);
  console.log(`RSS: relay ${rssMiB(relay.child).toFixed(0)} MiB, orchestrator ${rssMiB(orch.child).toFixed(0)} MiB, bench process ${(process.memoryUsage().rss / 1048576).toFixed(0)} MiB`);
  return { p50: pct(roundTrips, 50), p99: pct(roundTrips, 99) };
}

/**
 * --tracing: two stacks side by side, tracing off and on, each warmed by a burst that is not
 * counted; then --rounds rounds in which both take no-match webhooks over the same --burst-seconds
 * (burstTogether); then one steady phase each. The median of the rounds' throughput ratios is the
 * figure. One after the other, two bursts of the same stack a few seconds apart differed by up to
 * 30 % on these VMs (an A/A run, both "off", read 0.77 to 1.34 over eight rounds): loaded together,
 * both meet the same machine.
 */
async function compareTracing(): Promise<void> {
  const rounds = Math.max(1, Math.min(40, Math.floor(Number(values.rounds)) || 1));
  const burstSeconds = Math.max(1, Math.min(60, Number(values['burst-seconds']) || 5));
  // Decoding every request costs protobufjs ~30 µs of CPU per span (0.09 ms per delivery) on
  // the same two cores as the servers: a collector's cost, not svc's, so only a sample is decoded.
  const decodeEvery = Math.max(1, Math.floor(Number(values['decode-every'])) || 25);
  const receiver = await startOtlpReceiver(undefined, { keep: false, decodeEvery });
  const stacks: Stack[] = [];
  try {
    const off = await startStack('_off', { OTEL_SDK_DISABLED: 'true' });
    stacks.push(off);
    const on = await startStack('_on', values.control ? { OTEL_SDK_DISABLED: 'true' } : { OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: '' });
    stacks.push(on);
    await burstTogether([off, on], Math.min(burstSeconds, 2));
    const receiver0 = { requests: receiver.requests, bytes: receiver.bytes };
    const benchCpu0 = process.cpuUsage();
    const pairs: Array<{ off: Burst; on: Burst }> = [];
    for (let round = 0; round < rounds; round++) {
      const [a, b] = await burstTogether([off, on], burstSeconds);
      pairs.push({ off: a, on: b });
      console.log(`round ${round + 1}: no-match throughput off ${a.throughput.toFixed(0)}/s, on ${b.throughput.toFixed(0)}/s, on/off ${(b.throughput / a.throughput).toFixed(3)}; CPU per webhook off/on: relay ${a.relayCpuMs.toFixed(3)}/${b.relayCpuMs.toFixed(3)} ms, orchestrator ${a.orchCpuMs.toFixed(3)}/${b.orchCpuMs.toFixed(3)} ms, the sender ${a.senderCpuMs.toFixed(3)}/${b.senderCpuMs.toFixed(3)} ms`);
    }
    const benchCpu = process.cpuUsage(benchCpu0);
    const exported = { requests: receiver.requests - receiver0.requests, bytes: receiver.bytes - receiver0.bytes };
    console.log(`== steady phase, tracing off ==`);
    const steadyOff = await steady(off);
    console.log(`== steady phase, tracing on ==`);
    const steadyOn = await steady(on);

    if (values.control) console.log('--control: both stacks run with tracing OFF; "on" below names the second stack');
    const sampler = process.env['OTEL_TRACES_SAMPLER'] ? `${process.env['OTEL_TRACES_SAMPLER']}${process.env['OTEL_TRACES_SAMPLER_ARG'] ? ` ${process.env['OTEL_TRACES_SAMPLER_ARG']}` : ''}` : 'parentbased_always_on (every delivery traced)';
    console.log(`tracing off vs on (two stacks side by side, ${rounds} round${rounds === 1 ? '' : 's'} of ${burstSeconds} s with both loaded together, ${CONCURRENCY} connections each; sampler ${sampler}; SVC_TRACE_SPAN_MIN_MS ${process.env['SVC_TRACE_SPAN_MIN_MS'] || '1 (default)'}):`);
    const median = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b);
      const mid = sorted.length / 2;
      return Number.isInteger(mid) ? (sorted[mid - 1]! + sorted[mid]!) / 2 : sorted[Math.floor(mid)]!;
    };
    const ratios = pairs.map(({ off, on }) => on.throughput / off.throughput);
    const ratio = median(ratios);
    const m = (pick: (p: Burst) => number, which: 'off' | 'on') => median(pairs.map((pair) => pick(pair[which])));
    console.log(`  on/off per round: ${ratios.map((r) => r.toFixed(3)).join(' ')}`);
    console.log(`  no-match throughput (median): off ${m((p) => p.throughput, 'off').toFixed(0)}/s, on ${m((p) => p.throughput, 'on').toFixed(0)}/s, on/off ${ratio.toFixed(3)} (min ${Math.min(...ratios).toFixed(3)}, max ${Math.max(...ratios).toFixed(3)}; target >= 0.90: ${ratio >= 0.9 ? 'OK' : 'MISS'})`);
    console.log(`  CPU per no-match webhook (median): relay off ${m((p) => p.relayCpuMs, 'off').toFixed(3)} ms, on ${m((p) => p.relayCpuMs, 'on').toFixed(3)} ms; orchestrator off ${m((p) => p.orchCpuMs, 'off').toFixed(3)} ms, on ${m((p) => p.orchCpuMs, 'on').toFixed(3)} ms; the sender off ${m((p) => p.senderCpuMs, 'off').toFixed(3)} ms, on ${m((p) => p.senderCpuMs, 'on').toFixed(3)} ms`);
    console.log(`  steady ${RATE}/s round trip: p50 off ${steadyOff.p50.toFixed(2)} ms, on ${steadyOn.p50.toFixed(2)} ms; p99 off ${steadyOff.p99.toFixed(2)} ms, on ${steadyOn.p99.toFixed(2)} ms`);
    const onDeliveries = pairs.reduce((sum, pair) => sum + pair.on.throughput * burstSeconds, 0);
    // Export requests differ in size (a full batch, or what the timer found): spans by bytes.
    const spansPerByte = receiver.decodedBytes === 0 ? 0 : receiver.decodedSpans / receiver.decodedBytes;
    console.log(`  during the rounds the receiver read ${exported.requests} OTLP export requests, ${(exported.bytes / 1048576).toFixed(1)} MiB (${(exported.bytes / onDeliveries) | 0} bytes per traced delivery; about ${((spansPerByte * exported.bytes) / onDeliveries).toFixed(2)} spans per delivery, from the ${receiver.decoded} requests decoded in the whole run, one in ${decodeEvery}); this process's CPU (receiver and bench) ${((benchCpu.user + benchCpu.system) / 1e6).toFixed(1)} s`);
  } finally {
    for (const stack of stacks) await stopStack(stack).catch(() => undefined);
    await receiver.close();
  }
}

// Killed or interrupted: the servers and the sender go with the bench.
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
});
try {
  // Bounded: the busy load ends by itself after this long even if the bench is killed.
  await withMachine(values.busy, values.tracing ? 120 + 60 * Math.max(1, Math.min(20, Number(values.rounds) || 1)) : 300, () => (values.tracing ? compareTracing() : main('', {})));
} finally {
  for (const child of children) child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1500));
  for (const name of allDbNames) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
  keepOrRemove(dataDir, values['keep-data']);
}
