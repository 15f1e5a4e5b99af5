// Storage throughput per backend: filesystem (objects on local disk; pre-signed URLs served by
// an HTTP listener as the orchestrator serves them) and s3 (the s3 plugin against s3rver on
// 127.0.0.1, test/fixtures/s3-server.ts). For each: orchestrator-side put/get (streams through
// the plugin) and agent-side pre-signed PUT/GET (fetch over HTTP). Prints MB/s median and p99
// (the slowest rounds) and the process's peak RSS; figures only, nothing is asserted.
// Run: node bench/storage.ts [MiB per object, default 32] [rounds, default 7]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Value } from 'typebox/value';
import type { StorageExtensionPoint } from '../core/extension-points/storage.ts';
import { startRouteServer } from '../core/testing/route-server.ts';
import { FilesystemStorage, storageRoutes } from '../plugins/storage/filesystem/index.ts';
import { S3StorageConfig } from '../plugins/storage/s3/index.ts';
import { S3Storage } from '../plugins/storage/s3/storage.ts';
import { startS3Server } from '../test/fixtures/s3-server.ts';

const MiB = 1024 * 1024;
const sizeMiB = Number(process.argv[2] ?? 32);
const rounds = Number(process.argv[3] ?? 7);
const body = randomBytes(sizeMiB * MiB);

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => sorted(xs)[Math.floor(xs.length / 2)] as number;
/** The slow tail of throughput: the 1st percentile of MB/s (with few rounds, the slowest). */
const p99slow = (xs: number[]) => sorted(xs)[Math.floor(xs.length * 0.01)] as number;
let peakRss = 0;
const sampleRss = () => (peakRss = Math.max(peakRss, process.memoryUsage.rss()));

async function drain(stream: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const chunk of stream) n += (chunk as Uint8Array).length;
  return n;
}

/** Chunks of 1 MiB, as a tarball streamed from disk would arrive. */
const streamed = () => Readable.from((function* () {
  for (let o = 0; o < body.length; o += MiB) yield body.subarray(o, o + MiB);
})());

async function measure(what: string, fn: (round: number) => Promise<number>): Promise<void> {
  await fn(-1); // warm-up
  const rates: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = performance.now();
    const bytes = await fn(round);
    if (bytes !== body.length) throw new Error(`${what}: moved ${bytes} bytes, expected ${body.length}`);
    rates.push(bytes / MiB / ((performance.now() - started) / 1000));
    sampleRss();
  }
  console.log(`  ${what.padEnd(22)} median ${median(rates).toFixed(1).padStart(7)} MB/s   p99 (slowest) ${p99slow(rates).toFixed(1).padStart(7)} MB/s`);
}

async function bench(name: string, storage: StorageExtensionPoint): Promise<void> {
  console.log(`${name}: ${sizeMiB} MiB objects, ${rounds} rounds`);
  await measure('put (stream)', async (r) => (await storage.put(`bench/put-${r}`, streamed())).size);
  await measure('get (stream)', async (r) => drain(await storage.get(`bench/put-${Math.max(r, 0)}`)));
  await measure('pre-signed PUT (fetch)', async (r) => {
    const url = await storage.presign({ method: 'PUT', key: `bench/url-${r}` });
    const response = await fetch(url, { method: 'PUT', body });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`PUT ${response.status}`);
    return (await storage.head(`bench/url-${r}`))?.size ?? 0;
  });
  await measure('pre-signed GET (fetch)', async (r) => {
    const response = await fetch(await storage.presign({ method: 'GET', key: `bench/url-${Math.max(r, 0)}` }));
    if (!response.ok || response.body === null) throw new Error(`GET ${response.status}`);
    return drain(response.body);
  });
}

const dir = await mkdtemp(join(tmpdir(), 'svc-bench-storage-'));
const server = await startRouteServer();
const s3 = await startS3Server({ bucket: 'bench' });
try {
  const secret = randomBytes(32).toString('base64url');
  const fs = new FilesystemStorage({ root: join(dir, 'fs'), presign: { publicBaseUrl: server.url, secret, prefix: '/storage' } });
  await fs.init();
  await server.mount(async (app) => storageRoutes(app, { storage: fs, secret, prefix: '/storage', maxUploadBytes: 5 * 1024 ** 3 }));
  await bench('filesystem', fs);
  const s3Storage = new S3Storage(Value.Default(S3StorageConfig, s3.pluginConfig()) as S3StorageConfig);
  try {
    await bench('s3 (s3rver on 127.0.0.1, multipart in 16 MiB parts)', s3Storage);
  } finally {
    s3Storage.close();
  }
  console.log(`peak RSS ${(peakRss / MiB).toFixed(0)} MB (this process: plugin, HTTP listener and s3rver together)`);
} finally {
  await server.close();
  await s3.stop();
  await rm(dir, { recursive: true, force: true });
}
