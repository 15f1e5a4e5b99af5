// The steady phase's load generator, in a process of its own: only Node's built-ins (node:http
// with a keep-alive agent), a small heap, nothing else on its event loop. In the bench process itself (which holds
// database pools and much of the kernel) its own pauses held sends back and then let them out
// together, so the servers saw bursts instead of a steady rate. Started with fork(); takes
// { url, rate, seconds, warmSeconds } over IPC, says { warm: true } after the warm-up, waits for
// any message, and answers { results: [sentAtMs, roundTripMs, status][], cpuMs } of the measured
// phase (cpuMs: this process's CPU over it).
//
// node:http, not fetch: on a 2-core machine the sender shares the cores with the servers it
// measures, and fetch (undici) cost ~0.9 ms of CPU per request here against ~0.2 ms for
// http.request: at 200/s a fifth of a core, as much as the relay itself, that a real sender (a
// forge across the network) never takes from the servers. The background load the targets are
// judged under is `--busy`'s, not the load generator's own.
import { randomUUID } from 'node:crypto';
import http from 'node:http';

interface Job {
  url: string;
  rate: number;
  seconds: number;
  /** Seconds at the same rate before the measured phase, not recorded (see `run`). */
  warmSeconds: number;
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
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send!({ warm: true });
  });
  const before = process.cpuUsage();
  const results = await paced(job.url, 'match', job.rate, Math.round(job.rate * job.seconds));
  const cpu = process.cpuUsage(before);
  return { results, cpuMs: (cpu.user + cpu.system) / 1000 };
}

process.once('message', (job: Job) => {
  void run(job).then((answer) => process.send!(answer, () => process.exit(0)));
});
