// Exponential back-off with jitter, shared by every retry loop that waits between attempts
// (forge status deliveries, kept webhook deliveries): attempt n waits between half and all of
// min(max, base · 2^(n-1)), so retries of many items spread out instead of arriving together.
export function backoffMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, attempt - 1)));
  return Math.floor(ceiling / 2 + (random() * ceiling) / 2);
}
