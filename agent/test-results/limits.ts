// Bounds on what the agent reads from result files (docs/test-results.md "Limits"). A file or a
// field over them is refused or clipped with a recorded reason; none of them can crash the agent.
export const TEST_LIMITS = {
  /** One result file. */
  maxFileBytes: 64 * 1024 * 1024,
  /** All the files of one step. */
  maxStepBytes: 256 * 1024 * 1024,
  /** Files one step may match. */
  maxFiles: 1000,
  /** Test cases one step may record; the rest are counted in a problem line. */
  maxTests: 50_000,
  suiteLength: 500,
  nameLength: 1000,
  fileLength: 1000,
  messageLength: 4096,
  outputLength: 8192,
  /** First lines of a failure's output kept. */
  outputLines: 30,
  /** XML element nesting; TAP subtest depth. */
  maxDepth: 64,
} as const;

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The first `lines` lines of a text, clipped to `max` characters. */
export function firstLines(text: string, lines: number, max: number): string {
  const kept = text.split(/\r?\n/).slice(0, lines).join('\n');
  return clip(kept.trimEnd(), max);
}

/** Seconds as JUnit writes them (`0.012`) → whole milliseconds; anything else → undefined. */
export function secondsToMs(value: unknown): number | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const n = typeof value === 'number' ? value : Number(value.replace(/,/g, ''));
  if (!Number.isFinite(n) || n < 0 || n > 2_000_000) return undefined;
  return Math.round(n * 1000);
}
