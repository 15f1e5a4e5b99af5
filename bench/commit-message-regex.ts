// Ingest latency with and without a workflow whose commit-message regular expression backtracks
// catastrophically (`(a+)+$` on forty `a`s and a `!`). In-process ingest pipeline (the ingest
// tests' harness: real PostgreSQL, plugin host, in-memory forge); each sample is one
// `ingestDelivery` call, start to answer, one delivery at a time. Phases:
//
// 1. lock without it: a plain workflow and one with a benign expression (`^release:`);
// 2. lock with it added: every delivery waits for the bound (and a fresh worker after it);
// 3. the first lock's deliveries while deliveries of the second arrive back to back (the
//    regex guard has one worker, so the benign expression queues behind the hostile one).
//
// Also the main thread's event-loop delay per phase (perf_hooks): the figure the guard exists
// for. Figures only, no assertions. Run: node bench/commit-message-regex.ts [samples=100]
// Database: SVC_TEST_DATABASE_URL (default local PostgreSQL), else embedded.
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { COMMIT_MESSAGE_REGEX_TIMEOUT_MS } from '../kernel/orchestrator/ingest/steps/message-regex.ts';
import { createDatabase } from '../kernel/services/db/index.ts';
import { embeddedServer, freshDatabase, systemAvailability, systemTestUrl, testLogger, type Test } from '../test/fixtures/db.ts';
import { pushPayload } from '../test/fixtures/github-payloads.ts';
import { trig, workflow } from '../test/fixtures/locks.ts';
import { delivery, makeHarness, type Harness } from '../test/kernel/orchestrator/ingest/harness.ts';

const samples = Number(process.argv[2] ?? 100);
const MESSAGE = `${'a'.repeat(40)}!`;
const PLAIN_SHA = '1'.repeat(40);
const HOSTILE_SHA = '2'.repeat(40);

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

function report(label: string, ms: number[], loopDelay: ReturnType<typeof monitorEventLoopDelay>): void {
  const sorted = [...ms].sort((a, b) => a - b);
  console.log(
    `${label.padEnd(44)} n=${sorted.length}  p50 ${pct(sorted, 50).toFixed(1)} ms  p99 ${pct(sorted, 99).toFixed(1)} ms  max ${(sorted.at(-1) ?? NaN).toFixed(1)} ms` +
      `   event-loop delay max ${(loopDelay.max / 1e6).toFixed(1)} ms`,
  );
}

async function timed(h: Harness, secret: string, sha: string, n: number, branch: string): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const d = delivery(pushPayload({ after: sha, ref: `refs/heads/${branch}-${i}`, message: MESSAGE }), { secret });
    const began = performance.now();
    const outcome = await h.pipeline.ingestDelivery(d);
    ms.push(performance.now() - began);
    if (outcome.status !== 'matched') throw new Error(`delivery ${i} on ${sha.slice(0, 4)}: ${outcome.status} ${outcome.message ?? ''}`);
  }
  return ms;
}

async function phase(label: string, run: () => Promise<number[]>): Promise<void> {
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const ms = await run();
  loopDelay.disable();
  report(label, ms, loopDelay);
}

async function main(h: Harness, secret: string): Promise<void> {
  const benign = workflow('release', [trig.push({ commitMessage: { kind: 'regex', source: '^release:', flags: '' } })]);
  h.forge.putLock(PLAIN_SHA, [workflow('plain', [trig.push()]), benign]);
  h.forge.putLock(HOSTILE_SHA, [workflow('plain', [trig.push()]), benign, workflow('hostile', [trig.push({ commitMessage: { kind: 'regex', source: '(a+)+$', flags: '' } })])]);
  // Warm both paths (JIT, lock cache, the guard's first worker).
  await timed(h, secret, PLAIN_SHA, 20, 'warm');
  await timed(h, secret, HOSTILE_SHA, 3, 'warm');

  await phase('1. lock without the catastrophic workflow', () => timed(h, secret, PLAIN_SHA, samples, 'p'));
  await phase('2. lock with it', () => timed(h, secret, HOSTILE_SHA, Math.max(10, Math.floor(samples / 4)), 'h'));
  await phase('3. without it, while its deliveries arrive', async () => {
    let stop = false;
    let hostile = 0;
    const background = (async () => {
      while (!stop) hostile += (await timed(h, secret, HOSTILE_SHA, 1, `bg-${hostile}`)).length;
    })();
    const ms = await timed(h, secret, PLAIN_SHA, samples, 'm');
    stop = true;
    await background;
    console.log(`   (${hostile} deliveries of the catastrophic lock meanwhile)`);
    return ms;
  });
}

const system = await systemAvailability();
const serverUrl = system.ok ? systemTestUrl() : (await embeddedServer()).url;
console.log(`commit-message regex bench: ${samples} samples, bound ${COMMIT_MESSAGE_REGEX_TIMEOUT_MS} ms, ${system.ok ? 'system' : 'embedded'} PostgreSQL; load average at start ${load()}`);
const database = await freshDatabase(serverUrl);
const pool = await createDatabase({ url: database.url, logger: testLogger, maxPoolSize: 5 });
// The harness registers its clean-up with a test; here the bench runs it at the end.
const teardowns: Array<() => unknown> = [];
const t = { teardown: (fn: () => unknown) => teardowns.push(fn) } as unknown as Test;
try {
  const h = await makeHarness(t, { kind: system.ok ? 'system' : 'embedded', url: database.url, name: database.name, serverUrl, pool, logger: testLogger, extraDatabase: () => Promise.reject(new Error('not in the bench')) });
  const { secret } = await h.addSource();
  await main(h, secret);
} finally {
  for (const fn of teardowns.reverse()) await fn();
  await pool.end();
  await database.drop();
}
console.log(`load average at end ${load()}`);
