// A job's log path: every line (runner.log lines, raw sandbox stdout/stderr, the agent's own
// setup lines) is masked, cut into lines, batched by size and time and sent as `log.chunk`
// with a per-job monotonic `seq`.
import { SecretSet, StreamMasker } from './masker.ts';

export const MAX_LINE_CHARS = 65_536;

export interface LogLine {
  at: string;
  step: string;
  stream: 'stdout' | 'stderr' | 'system';
  text: string;
}

export interface LogChunkOut {
  seq: number;
  lines: LogLine[];
}

export interface LogPipelineOptions {
  secrets: SecretSet;
  send(chunk: LogChunkOut): void;
  /** Send a batch at least this often while lines wait (default 250 ms). */
  intervalMs?: number;
  /** Lines per chunk (default 500; the schema allows 5 000). */
  maxLines?: number;
  /** Characters per chunk before it is sent early (default 256 KiB). */
  maxChars?: number;
  /** A held tail (possible secret start) is released after this much quiet (default 1 s). */
  holdMs?: number;
}

interface StreamState {
  step: string;
  stream: LogLine['stream'];
  masker: StreamMasker;
  partial: string;
  lastAt: string;
  lastPush: number;
}

export class LogPipeline {
  readonly #options: Required<Omit<LogPipelineOptions, 'secrets' | 'send'>> & Pick<LogPipelineOptions, 'secrets' | 'send'>;
  readonly #streams = new Map<string, StreamState>();
  #batch: LogLine[] = [];
  #batchChars = 0;
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: LogPipelineOptions) {
    this.#options = { intervalMs: 250, maxLines: 500, maxChars: 256 * 1024, holdMs: 1000, ...options };
  }

  /** One whole line (no newline). */
  line(step: string, stream: LogLine['stream'], text: string, at: string = new Date().toISOString()): void {
    this.#push(step, stream, `${text}\n`, at);
  }

  /** Raw output as it arrives (any chunking). */
  raw(step: string, stream: LogLine['stream'], chunk: string): void {
    this.#push(step, stream, chunk, new Date().toISOString());
  }

  /** Next seq that will be used (for tests and resumption). */
  get nextSeq(): number {
    return this.#seq;
  }

  #push(step: string, stream: LogLine['stream'], text: string, at: string): void {
    if (this.#closed) return;
    const key = `${step}\0${stream}`;
    let state = this.#streams.get(key);
    if (state === undefined) {
      state = { step, stream, masker: new StreamMasker(this.#options.secrets), partial: '', lastAt: at, lastPush: 0 };
      this.#streams.set(key, state);
    }
    state.lastAt = at;
    state.lastPush = Date.now();
    this.#take(state, state.masker.push(text), false);
    this.#schedule();
  }

  /** Cut masked text into lines; `final` emits an unterminated rest too. */
  #take(state: StreamState, masked: string, final: boolean): void {
    let text = state.partial + masked;
    let nl = text.indexOf('\n');
    while (nl !== -1) {
      this.#emit(state, text.slice(0, nl).replace(/\r$/, ''));
      text = text.slice(nl + 1);
      nl = text.indexOf('\n');
    }
    while (text.length > MAX_LINE_CHARS) {
      this.#emit(state, text.slice(0, MAX_LINE_CHARS));
      text = text.slice(MAX_LINE_CHARS);
    }
    if (final && text.length > 0) {
      this.#emit(state, text);
      text = '';
    }
    state.partial = text;
  }

  #emit(state: StreamState, text: string): void {
    for (let i = 0; i === 0 || i < text.length; i += MAX_LINE_CHARS) {
      const piece = text.slice(i, i + MAX_LINE_CHARS);
      this.#batch.push({ at: state.lastAt, step: state.step, stream: state.stream, text: piece });
      this.#batchChars += piece.length + 64;
      if (this.#batch.length >= this.#options.maxLines || this.#batchChars >= this.#options.maxChars) this.#sendBatch();
    }
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#tick();
    }, this.#options.intervalMs);
    this.#timer.unref?.();
  }

  #tick(): void {
    const now = Date.now();
    let waiting = false;
    for (const state of this.#streams.values()) {
      if (!state.masker.holding && state.partial === '') continue;
      if (now - state.lastPush >= this.#options.holdMs) this.#take(state, state.masker.flush(), true);
      else waiting = true;
    }
    this.#sendBatch();
    if (waiting) this.#schedule();
  }

  #sendBatch(): void {
    if (this.#batch.length === 0) return;
    const lines = this.#batch;
    this.#batch = [];
    this.#batchChars = 0;
    this.#options.send({ seq: this.#seq++, lines });
  }

  /** Flush everything held and stop. */
  close(): void {
    if (this.#closed) return;
    for (const state of this.#streams.values()) this.#take(state, state.masker.flush(), true);
    this.#sendBatch();
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
