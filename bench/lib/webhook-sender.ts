// The ingest bench's load generator, in a process of its own: only Node's built-ins (node:http
// with a keep-alive agent), a small heap, nothing else on its event loop. In the bench process itself (which holds
// database pools and much of the kernel) its own pauses held sends back and then let them out
// together, so the servers saw bursts instead of a steady rate. Started with fork(); takes one
// job over IPC, says { warm: true } after its warm-up, waits for any message, runs the measured
// phase and answers, then exits:
// - the steady phase, { url, rate, seconds, warmSeconds }: answers { results: [sentAtMs,
//   roundTripMs, status][], cpuMs };
// - the throughput phase, { kind: 'burst', url, requests, concurrency, seconds? }: no-match webhooks
//   from `concurrency` connections, each sending its next as soon as the last is answered, until
//   `requests` were sent or, with `seconds`, until that long has passed (two senders started
//   together then load two stacks over the same stretch of time); answers
//   { statuses: { [status]: count }, seconds, cpuMs }.
// cpuMs: this process's CPU over the measured phase.
//
// node:http, not fetch: on a 2-core machine the sender shares the cores with the servers it
// measures, and fetch (undici) cost ~0.9 ms of CPU per request here against ~0.2 ms for
// http.request: at 200/s a fifth of a core, as much as the relay itself, that a real sender (a
// forge across the network) never takes from the servers. The background load the targets are
// judged under is `--busy`'s, not the load generator's own.
import { randomUUID } from 'node:crypto';
import http from 'node:http';

interface Job {
  kind?: 'steady';
  url: string;
  rate: number;
  seconds: number;
  /** Seconds at the same rate before the measured phase, not recorded (see `run`). */
  warmSeconds: number;
}

interface BurstJob {
  kind: 'burst';
  url: string;
  requests: number;
  concurrency: number;
  /** Send for this long instead of `requests` requests. */
  seconds?: number;
}

type Result = [sentAtMs: number, roundTripMs: number, status: number];

/** Sockets kept open to the relay, as many as the requests in flight need. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** POSTs one webhook; resolves with the status once the whole answer is read, rejects on a socket error. */
function post(url: string, event: string): Promise<number> {
  const body = JSON.stringify({ event, nonce: randomUUID() });
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-delivery-id': randomUUID() },
      },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
        res.once('error', reject);
      },
    );
    request.once('error', reject);
    request.end(body);
  });
}

/** `count` requests of `event` at `rate`/s, each answered before the returned promise settles. */
async function paced(url: string, event: string, rate: number, count: number): Promise<Result[]> {
  const interval = 1000 / rate;
  const results: Result[] = [];
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < count; i += 1) {
    const wait = t0 + i * interval - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const sent = performance.now();
    pending.push(
      post(url, event)
        .then((status) => void results.push([sent - t0, performance.now() - sent, status]))
        .catch(() => void results.push([sent - t0, performance.now() - sent, 0])),
    );
  }
  await Promise.all(pending);
  return results;
}

/**
 * Warm-up, then the measured phase. The warm-up is what a server that has been taking this load
 * for a while has behind it: this process's HTTP client compiled and its connections to the relay open
 * at the concurrency the rate needs, the servers' matched-delivery path compiled, the previous
 * phase's background work (event-log objects) settled. 50 sequential requests no workflow
 * matches, then `warmSeconds` of matched deliveries at the rate; only then does it tell the bench
 * (`{ warm: true }`), which reads its "before" figures and answers `go`.
 */
async function run(job: Job): Promise<{ results: Result[]; cpuMs: number }> {
  for (let i = 0; i < 50; i += 1) await post(job.url, 'warmup');
  await paced(job.url, 'match', job.rate, Math.round(job.rate * job.warmSeconds));
  await warmThenWait();
  const before = process.cpuUsage();
  const results = await paced(job.url, 'match', job.rate, Math.round(job.rate * job.seconds));
  const cpu = process.cpuUsage(before);
  return { results, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** Tells the bench it is warm and waits for its go (the bench reads its "before" figures meanwhile). */
function warmThenWait(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send!({ warm: true });
  });
}

/**
 * The throughput phase. Warm-up: 50 no-match and 20 matched webhooks one at a time (both paths
 * compiled on the servers), then one request on each connection so they are all open.
 */
async function burst(job: BurstJob): Promise<{ statuses: Record<string, number>; seconds: number; cpuMs: number }> {
  for (let i = 0; i < 50; i += 1) await post(job.url, 'warmup');
  for (let i = 0; i < 20; i += 1) await post(job.url, 'match');
  await Promise.all(Array.from({ length: job.concurrency }, () => post(job.url, 'warmup')));
  await warmThenWait();
  const statuses: Record<string, number> = {};
  let next = 0;
  const before = process.cpuUsage();
  const began = performance.now();
  const until = job.seconds === undefined ? Infinity : began + job.seconds * 1000;
  const more = job.seconds === undefined ? () => next < job.requests : () => performance.now() < until;
  await Promise.all(
    Array.from({ length: job.concurrency }, async () => {
      while (more()) {
        next += 1;
        const status = await post(job.url, 'nomatch').catch(() => 0);
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  const cpu = process.cpuUsage(before);
  return { statuses, seconds, cpuMs: (cpu.user + cpu.system) / 1000 };
}

process.once('message', (job: Job | BurstJob) => {
  const answer = job.kind === 'burst' ? burst(job) : run(job);
  void answer.then((result) => process.send!(result, () => process.exit(0)));
});
