// One thread per process that writes small in-memory objects for filesystem storage with
// synchronous calls. Written with fs/promises, a put is nine libuv-pool round trips (open,
// write, fsync, fstat, close, rename; open, fsync, close of the directory), and each round trip
// costs the event loop a wake-up of a pool thread and one back: ~30 µs of CPU apiece on a
// 2-core Firecracker guest, 0.4 ms of the orchestrator's main thread per stored webhook payload
// (issue 19). Here a put is one message each way. The thread also shares directory fsyncs: the
// puts that reach it together are renamed one after another, then each directory is fsynced
// once for all of them (what group-sync.ts does for the pool path). A reply is sent only after
// its directory's fsync, so a resolved put is durable exactly as before.
import { Worker } from 'node:worker_threads';

export interface ThreadWrite {
  dir: string;
  temp: string;
  target: string;
  bytes: Uint8Array;
}

/** Where a failed write stopped (the caller maps errno codes per stage). */
export type WriteStage = 'open' | 'mkdir' | 'write' | 'rename';

export type ThreadWriteResult =
  | { ok: true; ino: bigint; size: bigint; mtimeNs: bigint; dirSynced: boolean; dirSyncError?: string }
  | { ok: false; stage: WriteStage; code: string; message: string };

interface Reply {
  id: number;
  ok: boolean;
  stage?: WriteStage;
  code?: string;
  message?: string;
  ino?: string;
  size?: string;
  mtimeNs?: string;
  dir?: string;
  dirSynced?: boolean;
  dirSyncError?: string;
}

// CommonJS source run with `eval`: the same from the sources and from dist/, no loader needed.
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const os = require('node:os');
// The priority of the process's libuv pool, whose work this thread takes over (the orchestrator
// lowers its pool: stored payloads are never on a webhook's path).
try {
  const self = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
  for (const tid of fs.readdirSync('/proc/self/task')) {
    if (fs.readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim() !== 'libuv-worker') continue;
    const pool = os.getPriority(Number(tid));
    if (pool > os.getPriority(self)) os.setPriority(self, pool);
    break;
  }
} catch {}
let done = [];
let scheduled = false;
function attempt(stage, fn) {
  try { return fn(); } catch (error) { error.stage = stage; throw error; }
}
function openTemp(m) {
  try {
    return fs.openSync(m.temp, 'wx', 0o644);
  } catch (error) {
    if (error.code !== 'ENOENT') { error.stage = 'open'; throw error; }
  }
  attempt('mkdir', () => fs.mkdirSync(m.dir, { recursive: true }));
  return attempt('open', () => fs.openSync(m.temp, 'wx', 0o644));
}
function writeOne(m) {
  let fd;
  try {
    fd = openTemp(m);
    const bytes = m.bytes;
    let offset = 0;
    while (offset < bytes.length) offset += attempt('write', () => fs.writeSync(fd, bytes, offset, bytes.length - offset));
    attempt('write', () => fs.fsyncSync(fd));
    const st = attempt('write', () => fs.fstatSync(fd, { bigint: true }));
    fs.closeSync(fd);
    fd = undefined;
    attempt('rename', () => fs.renameSync(m.temp, m.target));
    return { id: m.id, ok: true, dir: m.dir, ino: String(st.ino), size: String(st.size), mtimeNs: String(st.mtimeNs) };
  } catch (error) {
    if (fd !== undefined) { try { fs.closeSync(fd); } catch {} }
    try { fs.unlinkSync(m.temp); } catch {}
    return { id: m.id, ok: false, stage: error.stage || 'write', code: String(error.code || 'EIO'), message: String(error.message) };
  }
}
function syncDir(dir) {
  let fd;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
    return undefined;
  } catch (error) {
    return String(error.message);
  } finally {
    if (fd !== undefined) { try { fs.closeSync(fd); } catch {} }
  }
}
function flush() {
  scheduled = false;
  const batch = done;
  done = [];
  const synced = new Map();
  for (const reply of batch) {
    if (!reply.ok) continue;
    if (!synced.has(reply.dir)) {
      synced.set(reply.dir, syncDir(reply.dir));
      reply.dirSynced = true;
    }
    const failure = synced.get(reply.dir);
    if (failure !== undefined) reply.dirSyncError = failure;
  }
  parentPort.postMessage(batch);
}
parentPort.on('message', (m) => {
  done.push(writeOne(m));
  if (!scheduled) { scheduled = true; setImmediate(flush); }
});
`;

class WriterThread {
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #calls = new Map<number, (result: ThreadWriteResult) => void>();

  write(request: ThreadWrite): Promise<ThreadWriteResult> {
    const worker = this.#running();
    const id = this.#nextId++;
    return new Promise((resolve) => {
      this.#calls.set(id, resolve);
      // A put in flight keeps the process alive, as a pending fs call would.
      if (this.#calls.size === 1) worker.ref();
      // A message clones a view's whole ArrayBuffer: a Buffer that is a slice of a large one (or
      // of Node's 8 KiB pool) is copied to its own bytes first, and that copy is handed over.
      const { bytes } = request;
      if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) {
        worker.postMessage({ id, ...request });
      } else {
        const own = new Uint8Array(bytes);
        worker.postMessage({ id, ...request, bytes: own }, [own.buffer]);
      }
    });
  }

  #running(): Worker {
    this.#worker ??= this.#start();
    return this.#worker;
  }

  #start(): Worker {
    // Not the parent's flags (a test runner's loaders, --cpu-prof): the script needs none.
    const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [] });
    worker.on('message', (replies: Reply[]) => {
      for (const reply of replies) this.#settle(reply);
      if (this.#calls.size === 0) worker.unref();
    });
    worker.on('error', (error) => this.#lost(worker, error.message));
    worker.on('exit', (code) => this.#lost(worker, `it exited with code ${code}`));
    // Idle, it never keeps the process alive (after the listeners: they ref its port again).
    worker.unref();
    return worker;
  }

  #settle(reply: Reply): void {
    const resolve = this.#calls.get(reply.id);
    if (resolve === undefined) return;
    this.#calls.delete(reply.id);
    if (reply.ok) {
      resolve({
        ok: true,
        ino: BigInt(reply.ino!),
        size: BigInt(reply.size!),
        mtimeNs: BigInt(reply.mtimeNs!),
        dirSynced: reply.dirSynced === true,
        ...(reply.dirSyncError === undefined ? {} : { dirSyncError: reply.dirSyncError }),
      });
    } else {
      resolve({ ok: false, stage: reply.stage ?? 'write', code: reply.code ?? 'EIO', message: reply.message ?? 'write failed' });
    }
  }

  /** The thread is gone: its puts in flight fail (one may have been written; none is reported durable). */
  #lost(worker: Worker, why: string): void {
    if (this.#worker !== worker) return;
    this.#worker = undefined;
    for (const [id, resolve] of this.#calls) {
      this.#calls.delete(id);
      resolve({ ok: false, stage: 'write', code: 'EIO', message: `the storage writer thread stopped: ${why}` });
    }
  }
}

let shared: WriterThread | undefined;

/** Writes, fsyncs and renames `bytes` to `target` via `temp` in the process's writer thread. */
export function writeInThread(request: ThreadWrite): Promise<ThreadWriteResult> {
  shared ??= new WriterThread();
  return shared.write(request);
}
