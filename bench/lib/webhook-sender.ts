// The steady phase's load generator, in a process of its own: only Node's built-ins and its
// fetch, a small heap, nothing else on its event loop. In the bench process itself (which holds
// database pools and much of the kernel) its own pauses held sends back and then let them out
// together, so the servers saw bursts instead of a steady rate. Started with fork(); takes
// { url, rate, seconds } over IPC and answers { results: [sentAtMs, roundTripMs, status][] }.
import { randomUUID } from 'node:crypto';

interface Job {
  url: string;
  rate: number;
  seconds: number;
}

function post(url: string, event: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-delivery-id': randomUUID() },
    body: JSON.stringify({ event, nonce: randomUUID() }),
  });
}

async function run(job: Job): Promise<Array<[number, number, number]>> {
  // Warm this process's connections and JIT first (events no workflow matches).
  for (let i = 0; i < 50; i += 1) await (await post(job.url, 'warmup')).arrayBuffer();
  const total = Math.round(job.rate * job.seconds);
  const interval = 1000 / job.rate;
  const results: Array<[number, number, number]> = [];
  const pending: Promise<void>[] = [];
  const t0 = performance.now();
  for (let i = 0; i < total; i += 1) {
    const wait = t0 + i * interval - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const sent = performance.now();
    pending.push(
      post(job.url, 'match')
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

process.once('message', (job: Job) => {
  void run(job).then((results) => process.send!({ results }, () => process.exit(0)));
});
