// Log lines to the agent. Everything workflow code prints (ctx.$ output, console.*, direct
// process.stdout/stderr writes) becomes `runner.log` lines labelled with the step or hook
// running, one message per line (partial lines are held until their newline or the end of the
// activity). The runner's own stdout/stderr are never used for workflow output.
import type { Static } from 'typebox';
import type { RunnerLog } from '../../schemas/wire/runner.ts';
import { currentActivity } from './activity.ts';

export type LogStream = 'stdout' | 'stderr' | 'system';
type LogMessage = Static<typeof RunnerLog>;

/** Longest line text the wire accepts; longer lines are split. */
const MAX_LINE = 65_536;
/** A partial line longer than this is sent without waiting for its newline. */
const MAX_PENDING = 1_048_576;

export class LogSink {
  readonly #send: (message: LogMessage) => void;
  readonly #ready: () => Promise<void> | undefined;
  readonly #pending = new Map<string, { step: string; stream: LogStream; text: string }>();
  fallbackLabel = '(setup)';

  constructor(send: (message: LogMessage) => void, ready: () => Promise<void> | undefined = () => undefined) {
    this.#send = send;
    this.#ready = ready;
  }

  /** Undefined when lines may go now; else a promise for when the agent has caught up. */
  ready(): Promise<void> | undefined {
    return this.#ready();
  }

  /** Label of the code running now. */
  label(): string {
    return currentActivity()?.label ?? this.fallbackLabel;
  }

  /** One complete line (no newline). */
  line(step: string, stream: LogStream, text: string): void {
    const clean = text.endsWith('\r') ? text.slice(0, -1) : text;
    const at = new Date().toISOString();
    if (clean.length <= MAX_LINE) {
      this.#send({ type: 'runner.log', step, stream, text: clean, at });
      return;
    }
    for (let i = 0; i < clean.length; i += MAX_LINE) this.#send({ type: 'runner.log', step, stream, text: clean.slice(i, i + MAX_LINE), at });
  }

  /** A chunk of a byte stream: complete lines go now, the tail waits. */
  write(step: string, stream: LogStream, chunk: string): void {
    const key = `${stream}\0${step}`;
    const held = this.#pending.get(key);
    const text = (held?.text ?? '') + chunk;
    const parts = text.split('\n');
    const tail = parts.pop()!;
    for (const part of parts) this.line(step, stream, part);
    if (tail.length > MAX_PENDING) {
      this.line(step, stream, tail);
      this.#pending.delete(key);
    } else if (tail === '') this.#pending.delete(key);
    else this.#pending.set(key, { step, stream, text: tail });
  }

  /** Send held partial lines (of one label, or all). */
  flush(step?: string): void {
    for (const [key, held] of this.#pending) {
      if (step !== undefined && held.step !== step) continue;
      this.#pending.delete(key);
      this.line(held.step, held.stream, held.text);
    }
  }
}

type Write = typeof process.stdout.write;

function chunkText(chunk: unknown, encoding: unknown): string {
  if (typeof chunk === 'string') return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString(typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return String(chunk);
}

/**
 * Route process.stdout/stderr writes (and so console.*) to the sink. Returns the original
 * stderr writer (for the runner's own last-resort diagnostics) and a restore function.
 */
export function captureProcessOutput(sink: LogSink): { stderr: (text: string) => void; restore: () => void } {
  const originalOut = process.stdout.write;
  const originalErr = process.stderr.write;
  // A write returns false while the agent is behind and 'drain' follows once it caught up, as a
  // pipe would: code that waits for 'drain' (and streams piped here) stops instead of queueing.
  const draining = { stdout: false, stderr: false };
  const patch = (stream: 'stdout' | 'stderr'): Write =>
    ((chunk: unknown, encoding?: unknown, callback?: unknown) => {
      sink.write(sink.label(), stream, chunkText(chunk, encoding));
      const cb = typeof encoding === 'function' ? encoding : callback;
      if (typeof cb === 'function') queueMicrotask(() => (cb as () => void)());
      const backlog = sink.ready();
      if (backlog === undefined) return true;
      if (!draining[stream]) {
        draining[stream] = true;
        void backlog.then(() => {
          draining[stream] = false;
          process[stream].emit('drain');
        });
      }
      return false;
    }) as Write;
  process.stdout.write = patch('stdout');
  process.stderr.write = patch('stderr');
  return {
    stderr: (text: string) => {
      originalErr.call(process.stderr, text);
    },
    restore: () => {
      process.stdout.write = originalOut;
      process.stderr.write = originalErr;
    },
  };
}
