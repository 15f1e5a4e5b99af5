// Long-lived `git cat-file --batch-command` processes, one per mirror, reused across webhooks.
// A lock read ran four one-shot git processes besides the fetch (presence twice, ls-tree, the
// blob): about 16–29 ms each on a loaded machine, most of a webhook's answer time. One process
// answers the same questions over a pipe in well under a millisecond each.
//
// Requests to one process are answered in the order they were written, so they are queued and
// matched to answers in order. A process that dies fails its pending requests; the pool starts a
// new one for the next request (and retries a request once when its process died under it). The
// pool holds at most `maxProcesses` processes, closes one idle for `idleMs`, and closes them all
// on `close()`. git answers a missing object with `<name> missing` and goes on; an object it
// cannot read (corrupt) makes it exit with a message on stderr, which the error carries.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Logger } from 'pino';
import { SvcError } from '../../../core/errors.ts';
import { firstLine, gitEnvironment } from './git-command.ts';

export type ObjectAnswer = { found: false } | { found: true; oid: string; type: string; size: number; data?: Buffer };

interface Pending {
  kind: 'info' | 'contents';
  name: string;
  resolve: (answer: ObjectAnswer) => void;
  reject: (error: Error) => void;
}

/** The process ended (killed, crashed, closed) before answering; `stderr` is what it said. */
export class CatFileExited extends Error {
  readonly detail: string;
  readonly stderr: string;

  constructor(detail: string, stderr: string) {
    super(detail);
    this.detail = detail;
    this.stderr = stderr;
  }
}

/** Names cat-file receives: hex object ids, optionally peeled (`<oid>^{commit}`). Nothing else ever reaches its input. */
const OBJECT_NAME = /^[0-9a-f]{40}(\^\{(commit|tree)\})?$/;
const HEADER = /^([0-9a-f]{40}) ([a-z]+) (\d+)$/;
const STDERR_KEEP = 4096;

class CatFileProcess {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #pending: Pending[] = [];
  readonly #chunks: Buffer[] = [];
  #length = 0;
  #stderr = '';
  #exited = false;
  #header: { oid: string; type: string; size: number } | undefined;
  readonly exitedPromise: Promise<void>;
  idleTimer: NodeJS.Timeout | undefined;

  constructor(gitBinary: string, gitDir: string, alternates: string | undefined) {
    const env = gitEnvironment({ gitDir, ...(alternates === undefined ? {} : { alternates }) });
    this.#child = spawn(gitBinary, ['cat-file', '--batch-command'], { cwd: gitDir, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.exitedPromise = new Promise((resolve) => {
      this.#child.once('close', (code, signal) => {
        this.#fail(`exited (${signal ?? `code ${code}`})`);
        resolve();
      });
    });
    this.#child.once('error', (error) => this.#fail(`could not start: ${error.message}`));
    // Writes to a process that just died fail with EPIPE; the pending request fails through #fail.
    this.#child.stdin.on('error', () => undefined);
    this.#child.stdout.on('data', (chunk: Buffer) => this.#read(chunk));
    this.#child.stderr.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_KEEP);
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get exited(): boolean {
    return this.#exited;
  }

  get busy(): boolean {
    return this.#pending.length > 0;
  }

  request(kind: 'info' | 'contents', name: string): Promise<ObjectAnswer> {
    if (!OBJECT_NAME.test(name)) throw new Error(`cat-file request for a name that is not an object id: ${JSON.stringify(name)}`);
    if (this.#exited) return Promise.reject(new CatFileExited('exited before the request', this.#stderr));
    return new Promise((resolve, reject) => {
      this.#pending.push({ kind, name, resolve, reject });
      this.#child.stdin.write(`${kind} ${name}\n`);
    });
  }

  /** Answers to what was already asked still arrive; then git sees end of input and exits. */
  end(): void {
    this.#child.stdin.end();
  }

  kill(): void {
    this.#child.kill('SIGKILL');
  }

  #fail(detail: string): void {
    this.#exited = true;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    const error = new CatFileExited(detail, this.#stderr);
    for (const p of this.#pending.splice(0)) p.reject(error);
  }

  #read(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#length += chunk.length;
    for (;;) {
      const head = this.#pending[0];
      if (head === undefined) {
        if (this.#length > 0) this.#protocolError('output nobody asked for');
        return;
      }
      if (this.#header === undefined) {
        const newline = this.#indexOfNewline();
        if (newline < 0) return;
        const line = this.#take(newline + 1).toString('utf8', 0, newline);
        if (line.endsWith(' missing') || line.endsWith(' ambiguous')) {
          this.#pending.shift()!.resolve({ found: false });
          continue;
        }
        const match = HEADER.exec(line);
        if (match === null) return this.#protocolError(`an answer line it cannot read: ${JSON.stringify(line.slice(0, 200))}`);
        const header = { oid: match[1]!, type: match[2]!, size: Number(match[3]) };
        if (head.kind === 'info') {
          this.#pending.shift()!.resolve({ found: true, ...header });
          continue;
        }
        this.#header = header;
      }
      const header = this.#header;
      if (this.#length < header.size + 1) return;
      const data = this.#take(header.size + 1);
      if (data[header.size] !== 0x0a) return this.#protocolError(`object ${header.oid} does not end where its size says`);
      this.#header = undefined;
      this.#pending.shift()!.resolve({ found: true, ...header, data: data.subarray(0, header.size) });
    }
  }

  #protocolError(why: string): void {
    this.#stderr = `${this.#stderr}\nsvc: git cat-file sent ${why}`.slice(-STDERR_KEEP);
    this.kill();
  }

  #indexOfNewline(): number {
    let offset = 0;
    for (const c of this.#chunks) {
      const i = c.indexOf(0x0a);
      if (i >= 0) return offset + i;
      offset += c.length;
    }
    return -1;
  }

  #take(n: number): Buffer {
    const first = this.#chunks[0]!;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
    } else {
      const all = Buffer.concat(this.#chunks, this.#length);
      out = all.subarray(0, n);
      this.#chunks.length = 0;
      if (all.length > n) this.#chunks.push(all.subarray(n));
    }
    this.#length -= n;
    return out;
  }
}

export interface CatFilePoolOptions {
  gitBinary: string;
  /** Most processes open at once; past it the least recently used one is closed. */
  maxProcesses: number;
  /** A process unused this long is closed. */
  idleMs: number;
  /** Longest wait for one answer; then the process is killed and the request fails. */
  timeoutMs: number;
  logger: Logger;
}

export class CatFilePool {
  readonly #options: CatFilePoolOptions;
  /** Map order is use order: the first entry is the least recently used. */
  readonly #processes = new Map<string, CatFileProcess>();
  readonly #closing = new Set<CatFileProcess>();
  /** Object directories a repository's process also reads (a local remote's), by repository. */
  readonly #alternates = new Map<string, string>();
  #closed = false;

  constructor(options: CatFilePoolOptions) {
    this.#options = options;
  }

  /** Process ids of the open processes (operators' diagnostics, tests). */
  pids(): number[] {
    return [...this.#processes.values()].flatMap((p) => (p.pid === undefined || p.exited ? [] : [p.pid]));
  }

  /** `git cat-file` `info` (type and size) of one object in the repository at `gitDir`. */
  info(gitDir: string, name: string): Promise<ObjectAnswer> {
    return this.#ask(gitDir, 'info', name);
  }

  /** Type, size and bytes of one object. */
  contents(gitDir: string, name: string): Promise<ObjectAnswer> {
    return this.#ask(gitDir, 'contents', name);
  }

  /**
   * Let `gitDir`'s process also read objects from `objectsDir` (undefined: none). A change closes
   * the running process; the next request starts one with the new setting.
   */
  borrow(gitDir: string, objectsDir: string | undefined): void {
    if (this.#alternates.get(gitDir) === objectsDir) return;
    if (objectsDir === undefined) this.#alternates.delete(gitDir);
    else this.#alternates.set(gitDir, objectsDir);
    this.forget(gitDir);
  }

  /** Close the process of `gitDir` (its mirror was made again). */
  forget(gitDir: string): void {
    const proc = this.#processes.get(gitDir);
    if (proc === undefined) return;
    this.#processes.delete(gitDir);
    this.#retire(proc);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const p of this.#processes.values()) this.#retire(p);
    this.#processes.clear();
    // git exits at end of input; one that does not within 2 s is killed.
    await Promise.all(
      [...this.#closing].map(async (p) => {
        const grace = setTimeout(() => p.kill(), 2000);
        await p.exitedPromise;
        clearTimeout(grace);
      }),
    );
  }

  async #ask(gitDir: string, kind: 'info' | 'contents', name: string): Promise<ObjectAnswer> {
    for (let attempt = 1; ; attempt++) {
      const proc = this.#process(gitDir);
      try {
        return await this.#timed(proc, proc.request(kind, name), `${kind} ${name}`);
      } catch (error) {
        if (!(error instanceof CatFileExited)) throw error;
        if (this.#processes.get(gitDir) === proc) this.#processes.delete(gitDir);
        // Once more on a fresh process: one killed under a request says nothing about the object.
        if (attempt < 2 && !this.#closed) {
          this.#options.logger.warn({ gitDir, pid: proc.pid, detail: error.detail, stderr: firstLine(error.stderr) }, 'git cat-file ended under a request; starting another');
          continue;
        }
        const said = firstLine(error.stderr);
        const tooOld = /unknown option.*batch-command/.test(error.stderr) ? ' (svc needs git 2.36 or later for cat-file --batch-command)' : '';
        throw new SvcError('SVC_ERR_GIT_READ', `git cat-file ${kind} ${name} in ${gitDir} failed: the process ${error.detail}${said ? `: ${said}` : ''}${tooOld}`);
      }
    }
  }

  async #timed(proc: CatFileProcess, answer: Promise<ObjectAnswer>, what: string): Promise<ObjectAnswer> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        proc.kill();
        reject(new SvcError('SVC_ERR_GIT_READ', `git cat-file ${what} gave no answer within ${this.#options.timeoutMs} ms; the process was stopped`));
      }, this.#options.timeoutMs);
    });
    try {
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
      // The killed process's own rejection has nobody waiting for it any more.
      answer.catch(() => undefined);
      this.#idleLater(proc);
    }
  }

  #process(gitDir: string): CatFileProcess {
    if (this.#closed) throw new SvcError('SVC_ERR_GIT_READ', 'the git provider is shut down');
    let proc = this.#processes.get(gitDir);
    if (proc !== undefined && proc.exited) {
      this.#processes.delete(gitDir);
      proc = undefined;
    }
    if (proc === undefined) {
      while (this.#processes.size >= this.#options.maxProcesses) {
        const [oldest, lru] = this.#processes.entries().next().value!;
        this.#processes.delete(oldest);
        this.#retire(lru);
      }
      proc = new CatFileProcess(this.#options.gitBinary, gitDir, this.#alternates.get(gitDir));
      void proc.exitedPromise.then(() => {
        if (this.#processes.get(gitDir) === proc) this.#processes.delete(gitDir);
      });
    } else this.#processes.delete(gitDir);
    this.#processes.set(gitDir, proc);
    if (proc.idleTimer !== undefined) clearTimeout(proc.idleTimer);
    proc.idleTimer = undefined;
    return proc;
  }

  #idleLater(proc: CatFileProcess): void {
    if (proc.busy || proc.exited) return;
    if (proc.idleTimer !== undefined) clearTimeout(proc.idleTimer);
    proc.idleTimer = setTimeout(() => {
      for (const [dir, p] of this.#processes) if (p === proc) this.#processes.delete(dir);
      this.#retire(proc);
    }, this.#options.idleMs);
    proc.idleTimer.unref();
  }

  #retire(proc: CatFileProcess): void {
    if (proc.idleTimer !== undefined) clearTimeout(proc.idleTimer);
    this.#closing.add(proc);
    void proc.exitedPromise.then(() => this.#closing.delete(proc));
    proc.end();
  }
}
