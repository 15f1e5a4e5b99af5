// One way to print a duration for a person, everywhere (dashboard, CLIs, local runs): a step that
// took 180 ms must not read "0s", and a two-minute job must not read "120.0s". Milliseconds below
// a second, seconds with one decimal below a minute, then minutes and seconds, then hours and
// minutes. Machine output (--json, JUnit) keeps raw numbers and never goes through this.

/** "812ms", "4.2s", "1m 05s", "2h 03m"; `missing` when the value is unknown or not a duration. */
export function formatDuration(ms: number | null | undefined, missing = '—'): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return missing;
  if (ms < 999.5) return `${Math.round(ms)}ms`;
  // 59,960 ms would round to "60.0s": from there on it is a minute.
  if (ms < 59_950) return `${(ms / 1000).toFixed(1)}s`;
  const totalSeconds = Math.round(ms / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  if (minutes < 60) return `${minutes}m ${String(totalSeconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

/** Whole milliseconds with thousands grouped: "812 ms", "12,045 ms" (the run page's timeline, where a phase's exact length matters). */
export function formatMillis(ms: number | null | undefined, missing = '—'): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return missing;
  return `${Math.round(ms).toLocaleString('en-US')} ms`;
}

/** Milliseconds between two ISO times (`end` null = still running, measured to `now`). */
export function millisBetween(start: string | null, end: string | null, now = Date.now()): number | null {
  if (start === null) return null;
  const from = Date.parse(start);
  const to = end === null ? now : Date.parse(end);
  return Number.isNaN(from) || Number.isNaN(to) ? null : Math.max(0, to - from);
}
