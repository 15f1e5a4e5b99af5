// The steady phase's load generator, in a process of its own: only Node's built-ins and its
// fetch, a small heap, nothing else on its event loop. In the bench process itself (which holds
// database pools and much of the kernel) its own pauses held sends back and then let them out
// together, so the servers saw bursts instead of a steady rate. Started with fork(); takes
// { url, rate, seconds, warmSeconds } over IPC, says { warm: true } after the warm-up, waits for
// any message, and answers { results: [sentAtMs, roundTripMs, status][] } of the measured phase.
import { randomUUID } from 'node:crypto';

interface Job {
  url: string;
  rate: number;
  seconds: number;
  /** Seconds at the same rate before the measured phase, not recorded (see `run`). */
  warmSeconds: number;
}

type Result = [sentAtMs: number, roundTripMs: number, status: number];

function post(url: string, event: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-delivery-id': randomUUID() },
    body: JSON.stringify({ event, nonce: randomUUID() }),
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
        .then(async (res) => {
          await res.arrayBuffer();
          results.push([sent - t0, performance.now() - sent, res.status]);
        })
        .catch(() => void results.push([sent - t0, performance.now() - sent, 0])),
    );
  }
  await Promise.all(pending);
  return results;
}

/**
 * Warm-up, then the measured phase. The warm-up is what a server that has been taking this load
 * for a while has behind it: this process's fetch compiled and its connections to the relay open
 * at the concurrency the rate needs, the servers' matched-delivery path compiled, the previous
 * phase's background work (event-log objects) settled. 50 sequential requests no workflow
 * matches, then `warmSeconds` of matched deliveries at the rate; only then does it tell the bench
 * (`{ warm: true }`), which reads its "before" figures and answers `go`.
 */
async function run(job: Job): Promise<Result[]> {
  for (let i = 0; i < 50; i += 1) await (await post(job.url, 'warmup')).arrayBuffer();
  await paced(job.url, 'match', job.rate, Math.round(job.rate * job.warmSeconds));
  await new Promise<void>((resolve) => {
    process.once('message', () => resolve());
    process.send!({ warm: true });
  });
  return paced(job.url, 'match', job.rate, Math.round(job.rate * job.seconds));
}

process.once('message', (job: Job) => {
  void run(job).then((results) => process.send!({ results }, () => process.exit(0)));
});
