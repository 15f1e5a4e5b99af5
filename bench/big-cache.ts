// A big dependency cache saved and restored the way an agent does it, through filesystem and S3
// storage, against a plain copy of the same bytes on the same store.
// The tree (default 1 GiB) looks like a node_modules: packages of many files of mixed sizes
// (log-normal, 100 B to 4 MiB), mostly source-like text that compresses about as real
// JavaScript does, plus some incompressible binaries. Then, per store:
//   save     listTree + writeTarball (deterministic tar.gz, agent/build-job/tarball.ts) and
//            uploadFile to a pre-signed PUT (agent/jobs/download.ts): what a build job does;
//   restore  fetchDeps (agent/jobs/restore.ts): download to a file with its sha256 checked, then
//            extractArchive (scan + extract, agent/jobs/extract.ts): what a job's set-up does;
//   plain    the same file bytes, read in order and sent as ONE object (no archive, no
//            compression, no digest) through a pre-signed PUT, and fetched back with one GET
//            whose bytes are written into the same files again (what cp -r would write):
//            the floor of moving these bytes to this store and back.
// Prints wall time, MB/s of the tree's bytes, this process's CPU, and svc / plain per direction
// (target ≤ 2x), and the process's peak RSS. The stores run in this process (the filesystem
// store's HTTP listener, s3rver from test/fixtures/s3-server.ts), on 127.0.0.1.
//   node bench/big-cache.ts [--size MiB=1024] [--store filesystem|s3|both] [--busy] [--keep-data]
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { Value } from 'typebox/value';
import { listTree, writeTarball } from '../agent/build-job/tarball.ts';
import { downloadToFile, uploadFile } from '../agent/jobs/download.ts';
import { fetchDeps } from '../agent/jobs/restore.ts';
import type { StorageExtensionPoint } from '../core/extension-points/storage.ts';
import { startRouteServer } from '../core/testing/route-server.ts';
import { FilesystemStorage, storageRoutes } from '../plugins/storage/filesystem/index.ts';
import { S3StorageConfig } from '../plugins/storage/s3/index.ts';
import { S3Storage } from '../plugins/storage/s3/storage.ts';
import { startS3Server } from '../test/fixtures/s3-server.ts';
import { keepOrRemove, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    size: { type: 'string', default: '1024' },
    store: { type: 'string', default: 'both' },
    busy: { type: 'boolean', default: false },
    'keep-data': { type: 'boolean', default: false },
  },
});
const MiB = 1024 * 1024;
const SIZE = Math.max(1, Math.min(8192, Number(values.size))) * MiB;
if (!['filesystem', 's3', 'both'].includes(values.store)) throw new Error(`--store: filesystem, s3 or both (got ${values.store})`);

// ---------------------------------------------------------------- the tree
/** A deterministic generator (xorshift), so two runs build the same tree. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x1_0000_0000;
  };
}

const WORDS = ('function return const let var if else for while module exports require import from default class extends ' +
  'this new typeof undefined null true false async await yield throw try catch finally switch case break continue value options ' +
  'callback error result buffer stream length index key object array string number push map filter reduce prototype call apply ' +
  'bind resolve reject promise then emit listener handler config path join dirname parse stringify encode decode').split(' ');

/** 32 MiB of source-like text (identifiers, punctuation, indentation): compresses 3-5x with gzip. */
function textPool(random: () => number): Buffer {
  const parts: string[] = [];
  let size = 0;
  while (size < 32 * MiB) {
    const indent = ' '.repeat(2 * Math.floor(random() * 4));
    const n = 3 + Math.floor(random() * 9);
    const words: string[] = [];
    for (let i = 0; i < n; i++) words.push(random() < 0.15 ? `${WORDS[Math.floor(random() * WORDS.length)]}${Math.floor(random() * 1000)}` : WORDS[Math.floor(random() * WORDS.length)]!);
    const line = `${indent}${words.join(random() < 0.3 ? '.' : ' ')}${random() < 0.5 ? ';' : ' {'}\n`;
    parts.push(line);
    size += line.length;
  }
  return Buffer.from(parts.join(''));
}

interface TreeInfo {
  files: number;
  bytes: number;
  /** Files in a fixed order (what the plain copy sends). */
  list: string[];
  /** Each file's size, in list order. */
  sizes: number[];
}

async function makeTree(root: string, target: number): Promise<TreeInfo> {
  const random = rng(39);
  const text = textPool(random);
  const binary = randomBytes(8 * MiB);
  const list: string[] = [];
  const sizes: number[] = [];
  let bytes = 0;
  let pkg = 0;
  while (bytes < target) {
    const dir = path.join('node_modules', `pkg-${pkg}`);
    await mkdir(path.join(root, dir, 'lib'), { recursive: true });
    const manifest = JSON.stringify({ name: `pkg-${pkg}`, version: `1.${pkg % 17}.${pkg % 5}`, main: 'lib/index.js', license: 'MIT' }, null, 2);
    await writeFile(path.join(root, dir, 'package.json'), manifest);
    list.push(path.join(dir, 'package.json'));
    sizes.push(manifest.length);
    bytes += manifest.length;
    const files = 5 + Math.floor(random() * 40);
    for (let f = 0; f < files && bytes < target; f++) {
      // Log-normal sizes: most files a few KiB, a few of megabytes.
      const size = Math.min(4 * MiB, Math.max(100, Math.round(Math.exp(7.5 + 1.8 * gaussian(random)))), target - bytes);
      const isBinary = random() < 0.08;
      const pool = isBinary ? binary : text;
      const at = Math.floor(random() * (pool.length - size));
      const rel = path.join(dir, 'lib', `m${f}${isBinary ? '.node' : '.js'}`);
      await writeFile(path.join(root, rel), pool.subarray(at, at + size));
      list.push(rel);
      sizes.push(size);
      bytes += size;
    }
    pkg += 1;
  }
  return { files: list.length, bytes, list, sizes };
}

function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(random() || 1e-9)) * Math.cos(2 * Math.PI * random());
}

// ---------------------------------------------------------------- the measurements
let peakRss = 0;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 100);
rssTimer.unref();

interface Timed {
  seconds: number;
  cpu: number;
}

async function timed(fn: () => Promise<unknown>): Promise<Timed> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const used = process.cpuUsage(cpu0);
  return { seconds: (performance.now() - t0) / 1000, cpu: (used.user + used.system) / 1e6 };
}

async function benchStore(name: string, storage: StorageExtensionPoint, source: string, tree: TreeInfo, work: string): Promise<void> {
  const scratch = path.join(work, `scratch-${name}`);
  await mkdir(scratch, { recursive: true });
  const tarball = path.join(scratch, 'deps.tar.gz');
  let sha = '';
  let tarBytes = 0;
  const pack = await timed(async () => {
    const entries = await listTree(source, ['node_modules']);
    const result = await writeTarball(source, entries, tarball);
    sha = result.sha256;
    tarBytes = result.bytes;
  });
  const put = await timed(async () => uploadFile(await storage.presign({ method: 'PUT', key: `deps/linux-x64/${sha}.tar.gz` }), tarball));
  await rm(tarball, { force: true });
  const into = path.join(scratch, 'restored');
  const restore = await timed(async () => {
    const url = await storage.presign({ method: 'GET', key: `deps/linux-x64/${sha}.tar.gz` });
    const outcome = await fetchDeps({ url, expected: sha, file: path.join(scratch, 'fetched.tar.gz'), into, log: () => undefined, signal: AbortSignal.timeout(3_600_000) });
    if (outcome !== 'restored') throw new Error(`${name}: restore ${outcome}`);
  });
  const restoredFiles = await countFiles(path.join(into, 'node_modules'));
  if (restoredFiles !== tree.files) throw new Error(`${name}: restored ${restoredFiles} files, expected ${tree.files}`);
  await rm(into, { recursive: true, force: true });

  const plainPut = await timed(async () => {
    const url = await storage.presign({ method: 'PUT', key: 'plain/tree.bin' });
    const body = Readable.from((async function* () {
      for (const rel of tree.list) yield* createReadStream(path.join(source, rel));
    })());
    const response = await fetch(url, { method: 'PUT', body: Readable.toWeb(body) as unknown as NonNullable<RequestInit["body"]>, headers: { 'content-length': String(tree.bytes) }, duplex: 'half' } as RequestInit);
    await response.body?.cancel();
    if (!response.ok) throw new Error(`${name}: plain PUT ${response.status}`);
  });
  // The floor of a restore: one GET, the bytes written back into the same files (as cp would).
  const plainInto = path.join(scratch, 'plain');
  const plainGet = await timed(async () => {
    const response = await fetch(await storage.presign({ method: 'GET', key: 'plain/tree.bin' }));
    if (!response.ok || response.body === null) throw new Error(`${name}: plain GET ${response.status}`);
    const written = await splitInto(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), plainInto, tree);
    if (written !== tree.bytes) throw new Error(`${name}: plain GET ${written} bytes, expected ${tree.bytes}`);
  });
  await rm(scratch, { recursive: true, force: true });

  const rate = (t: Timed) => `${(tree.bytes / MiB / t.seconds).toFixed(0).padStart(5)} MB/s`;
  const row = (label: string, t: Timed) => `  ${label.padEnd(46)} ${t.seconds.toFixed(2).padStart(7)} s  ${rate(t)}  CPU ${t.cpu.toFixed(1)} s\n`;
  const save: Timed = { seconds: pack.seconds + put.seconds, cpu: pack.cpu + put.cpu };
  process.stdout.write(
    `${name}: tarball ${(tarBytes / MiB).toFixed(0)} MiB (gzip ${(tree.bytes / tarBytes).toFixed(2)}x)\n` +
      row('save: pack (list + tar.gz + sha256)', pack) +
      row('save: PUT tarball (pre-signed)', put) +
      row('save total', save) +
      row('restore: GET + sha256 + scan + extract', restore) +
      row('plain save: the file bytes as one PUT', plainPut) +
      row('plain restore: one GET into the same files', plainGet) +
      `  save ${(save.seconds / plainPut.seconds).toFixed(2)}x the plain copy, restore ${(restore.seconds / plainGet.seconds).toFixed(2)}x  (target ≤ 2x: ${save.seconds <= 2 * plainPut.seconds && restore.seconds <= 2 * plainGet.seconds ? 'OK' : 'MISS'})\n`,
  );
}

/** Writes a stream of the tree's concatenated file bytes back into its files, in list order. */
async function splitInto(body: Readable, into: string, tree: TreeInfo): Promise<number> {
  const sizes = tree.sizes;
  let index = 0;
  let left = sizes[0] ?? 0;
  let written = 0;
  let chunks: Buffer[] = [];
  const made = new Set<string>();
  const flush = async () => {
    const file = path.join(into, tree.list[index]!);
    const dir = path.dirname(file);
    if (!made.has(dir)) {
      await mkdir(dir, { recursive: true });
      made.add(dir);
    }
    await writeFile(file, Buffer.concat(chunks));
    chunks = [];
    index += 1;
    left = sizes[index] ?? 0;
  };
  for await (const raw of body) {
    let chunk = raw as Buffer;
    written += chunk.length;
    while (chunk.length > 0) {
      const take = Math.min(left, chunk.length);
      chunks.push(chunk.subarray(0, take));
      chunk = chunk.subarray(take);
      left -= take;
      if (left === 0) await flush();
    }
  }
  return written;
}

async function countFiles(dir: string): Promise<number> {
  let n = 0;
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) if (entry.isFile()) n += 1;
  return n;
}

async function main(): Promise<void> {
  const work = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-big-cache-'));
  const route = await startRouteServer();
  const s3 = values.store === 'filesystem' ? undefined : await startS3Server({ bucket: 'bench' });
  try {
    const source = path.join(work, 'tree');
    const made = performance.now();
    const tree = await makeTree(source, SIZE);
    process.stdout.write(`tree: ${tree.files} files in ${new Set(tree.list.map((f) => f.split(path.sep)[1])).size} packages, ${(tree.bytes / MiB).toFixed(0)} MiB, written in ${((performance.now() - made) / 1000).toFixed(1)} s; data in ${work}\n`);
    if (values.store !== 's3') {
      const secret = randomBytes(32).toString('base64url');
      const fs = new FilesystemStorage({ root: path.join(work, 'fs-store'), presign: { publicBaseUrl: route.url, secret, prefix: '/storage' } });
      await fs.init();
      await route.mount(async (app) => storageRoutes(app, { storage: fs, secret, prefix: '/storage', maxUploadBytes: 16 * 1024 ** 3 }));
      await benchStore('filesystem', fs, source, tree, work);
    }
    if (s3 !== undefined) {
      const storage = new S3Storage(Value.Default(S3StorageConfig, s3.pluginConfig()) as S3StorageConfig);
      try {
        await benchStore('s3 (s3rver on 127.0.0.1)', storage, source, tree, work);
      } finally {
        storage.close();
      }
    }
    process.stdout.write(`peak RSS of this process (client, HTTP listener and s3rver together): ${(peakRss / MiB).toFixed(0)} MiB\n`);
  } finally {
    await route.close();
    await s3?.stop();
    keepOrRemove(work, values['keep-data']);
  }
}

await withMachine(values.busy, 3600, main);
// s3rver's and the route server's sockets may keep the loop alive for a while.
await stat(os.tmpdir());
process.exit(0);
