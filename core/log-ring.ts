// A bounded in-memory ring of this process's most recent log lines, for debug bundles
// (`svc-admin debug-bundle`). It is fed the lines pino writes, after the logger's redaction
// (core/logging.ts), so it never holds more than the process's own log output does. Bounded by
// line count and by bytes; a line longer than MAX_LINE_BYTES is cut.
export const LOG_RING_MAX_LINES = 2000;
export const LOG_RING_MAX_BYTES = 2 * 1024 * 1024;
const MAX_LINE_BYTES = 16 * 1024;

export class LogRing {
  readonly #lines: string[] = [];
  #bytes = 0;
  readonly maxLines: number;
  readonly maxBytes: number;

  constructor(maxLines = LOG_RING_MAX_LINES, maxBytes = LOG_RING_MAX_BYTES) {
    this.maxLines = maxLines;
    this.maxBytes = maxBytes;
  }

  push(chunk: string): void {
    for (let line of chunk.split('\n')) {
      if (line === '') continue;
      if (line.length > MAX_LINE_BYTES) line = `${line.slice(0, MAX_LINE_BYTES)}…(cut)`;
      this.#lines.push(line);
      this.#bytes += line.length;
    }
    while (this.#lines.length > this.maxLines || (this.#bytes > this.maxBytes && this.#lines.length > 1)) {
      this.#bytes -= this.#lines.shift()!.length;
    }
  }

  /** Oldest first. */
  lines(): string[] {
    return [...this.#lines];
  }
}

/** The ring a server program's logger feeds (svc-orchestrator: kernel/orchestrator/app.ts). */
export const PROCESS_LOG_RING = new LogRing();
