// Shared pieces of the benchmarks that run real processes: the machine's load average at start
// and end (a busy machine shows up in the tail, so every figure is printed next to it), the
// `--busy` mode (a background CPU load of `stress-ng --cpu 1 --cpu-load 50` for the whole
// measurement, started here and always ended by its pid), and the compiled programs as shipped.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The compiled program of a bin as shipped (`dist/bin/<name>.js`); `npm run build` first. */
export function distBin(name: 'svc-relay' | 'svc-orchestrator' | 'svc-agent'): string {
  const file = path.join(repoRoot, 'dist', 'bin', `${name}.js`);
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first (the benchmarks measure the compiled programs)`);
  return file;
}

export function loadAverage(): string {
  return os.loadavg().map((l) => l.toFixed(2)).join(' ');
}

/** Prints the machine line once at start; call the returned function at the end. */
export function machineLine(busy: boolean): () => void {
  const mode = busy ? 'busy (stress-ng --cpu 1 --cpu-load 50 in the background)' : 'quiet (no background load started)';
  process.stdout.write(`machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${mode}; load average at start ${loadAverage()}\n`);
  return () => process.stdout.write(`load average at end ${loadAverage()}\n`);
}

/**
 * What creating a file costs in `dir` right now, in system CPU per file (200 files of 1 KB,
 * created, written and closed; left there, removed with the bench's data directory). A machine
 * figure like the load average: on a journal-less ext4 (this VM's root), allocating an inode
 * skips every inode of its group freed in the last one to six minutes, reading each one's inode
 * table block (`recently_deleted` in `perf`), so after a large delete nearby (the previous
 * bench's data directory, a test run's) each new file costs several hundred µs instead of tens
 * for minutes, and every stored event-log payload and checked-out file pays it.
 */
export function fileCreateProbe(dir: string): string {
  const probeDir = path.join(dir, 'file-create-probe');
  mkdirSync(probeDir, { recursive: true });
  const bytes = Buffer.alloc(1024, 97);
  const count = 200;
  const before = process.cpuUsage();
  const began = performance.now();
  for (let i = 0; i < count; i += 1) {
    const fd = openSync(path.join(probeDir, `f${i}`), 'wx');
    writeSync(fd, bytes);
    closeSync(fd);
  }
  const wallUs = ((performance.now() - began) * 1000) / count;
  const used = process.cpuUsage(before);
  return `file create in the bench's data directory: ${(used.system / count).toFixed(0)} µs of system CPU each (${wallUs.toFixed(0)} µs wall; tens when inode allocation is cheap, several hundred after a large delete nearby on a journal-less ext4)`;
}

/**
 * Removes a bench's data directory, or with `--keep-data` leaves it and says where. Removing
 * thousands of files (the event-log objects, the agent's stores) is the "large delete nearby"
 * of `fileCreateProbe`: on a journal-less ext4 it slows file creation in the next bench run for
 * minutes. A set of runs meant to be compared keeps its directories and removes them after.
 */
export function keepOrRemove(dir: string, keep: boolean): void {
  if (keep) process.stdout.write(`data directory kept: ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}

export interface BusyLoad {
  /** Ends the load (by its pid); safe to call twice. */
  stop(): Promise<void>;
}

const STRESS = '/usr/bin/stress-ng';

/**
 * Starts `stress-ng --cpu 1 --cpu-load 50 --timeout <s>` in its own process group (its workers
 * are its children), so stop() ends exactly that group. The timeout is a second guard: a bench
 * killed before its finally still leaves no load behind past `seconds`.
 */
export async function startBusyLoad(seconds: number): Promise<BusyLoad> {
  const bin = existsSync(STRESS) ? STRESS : 'stress-ng';
  const child: ChildProcess = spawn(bin, ['--cpu', '1', '--cpu-load', '50', '--timeout', `${Math.ceil(seconds)}s`, '--quiet'], { stdio: 'ignore', detached: true });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (error) => reject(new Error(`--busy needs stress-ng (${bin}): ${error.message}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Let the workers start and reach their duty cycle before anything is measured.
  await new Promise((r) => setTimeout(r, 1000));
  let stopped = false;
  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGTERM');
        } catch {
          // already gone
        }
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null && child.signalCode === null) {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
    },
  };
}

/**
 * Runs `body` with the machine line around it and, in busy mode, the background load for at
 * most `maxSeconds`; the load is ended afterwards, on error too.
 */
export async function withMachine<T>(busy: boolean, maxSeconds: number, body: () => Promise<T>): Promise<T> {
  const end = machineLine(busy);
  const load = busy ? await startBusyLoad(maxSeconds) : undefined;
  // Ctrl-C, or `kill <pid>` of the bench: the load ends first, then the process ('exit' handlers
  // end the servers a bench started).
  // (Without --busy there is no load to end, and the process must still exit.)
  const stopOnSignal = () => void (load?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  try {
    return await body();
  } finally {
    process.off('SIGINT', stopOnSignal);
    process.off('SIGTERM', stopOnSignal);
    await load?.stop();
    end();
  }
}

/** CPU seconds (user + system) a process used so far, from /proc (Linux; NaN elsewhere). */
export function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // Clock ticks are 1/100 s on Linux (getconf CLK_TCK).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

/** Resident set size of a process in MiB, from /proc (Linux; NaN elsewhere). */
/** CPU seconds of every process whose command name is `comm` (e.g. all PostgreSQL backends). */
export function commandCpuSeconds(comm: string): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== comm) continue;
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return total;
}

/** The whole machine's busy and total CPU seconds so far (all cores, /proc/stat). */
export function machineCpuSeconds(): { busy: number; total: number; steal: number } {
  // user nice system idle iowait irq softirq steal (guest and guest_nice are inside user and nice).
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = fields.reduce((a, b) => a + b, 0) / 100;
  // idle and iowait are not busy.
  const idle = ((fields[3] ?? 0) + (fields[4] ?? 0)) / 100;
  // Time a virtual machine's CPUs were runnable but the hypervisor ran something else: counted as
  // busy, and a stall no process here caused (seen here: 3-17 % of a second during a bench).
  return { busy: total - idle, total, steal: (fields[7] ?? 0) / 100 };
}

/** The machine's CPU between two readings: busy (steal included) and stolen, in % of all cores. */
export function machineShare(before: { busy: number; total: number; steal: number }, after: { busy: number; total: number; steal: number }): string {
  const span = after.total - before.total;
  const share = (x: number) => (span > 0 ? ((100 * x) / span).toFixed(0) : '?');
  return `the machine ${share(after.busy - before.busy)} % busy (${os.cpus().length} cores; ${share(after.steal - before.steal)} % stolen by the hypervisor)`;
}

export function rssMiB(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The value at percentile p (0–100) of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/** Cumulative bucket counts of one histogram series in a Prometheus text scrape, by `le`. */
export type Buckets = Map<number, number>;

/**
 * The buckets of `name` whose labels include `labels` (e.g. `stage="receive_to_commit"`),
 * summed over the other labels.
 */
export function scrapeBuckets(text: string, name: string, labels = ''): Buckets {
  const out: Buckets = new Map();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}_bucket{`)) continue;
    if (labels !== '' && !line.includes(labels)) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    if (le === undefined) continue;
    const bound = le === '+Inf' ? Infinity : Number(le);
    out.set(bound, (out.get(bound) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/**
 * The q-quantile (0–1) of the observations made between two scrapes, interpolated linearly
 * inside its bucket (as Prometheus' histogram_quantile does). NaN with no observations; Infinity
 * when it lies past the last finite bucket.
 */
export function bucketQuantile(before: Buckets, after: Buckets, q: number): number {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0));
  const total = counts.at(-1) ?? 0;
  if (total <= 0) return NaN;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (let i = 0; i < bounds.length; i += 1) {
    if (counts[i]! >= rank) {
      const upper = bounds[i]!;
      if (!Number.isFinite(upper)) return Infinity;
      const inBucket = counts[i]! - below;
      return inBucket <= 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
    }
    lower = bounds[i]!;
    below = counts[i]!;
  }
  return lower;
}

/** Block-device counters from /proc/diskstats (Linux; empty elsewhere): whole disks only. */
export interface DiskCounters {
  writes: number;
  flushes: number;
  /** Milliseconds the device had I/O in flight. */
  busyMs: number;
}

export function diskCounters(): Map<string, DiskCounters> {
  const out = new Map<string, DiskCounters>();
  try {
    for (const line of readFileSync('/proc/diskstats', 'utf8').split('\n')) {
      const f = line.trim().split(/\s+/);
      const name = f[2];
      // Whole disks that did any writing (no partitions, loop, zram or ram devices).
      if (name === undefined || /^(loop|zram|ram)/.test(name) || /^(sd|vd|xvd|hd)[a-z]+\d+$/.test(name) || /^(nvme\d+n\d+|mmcblk\d+)p\d+$/.test(name)) continue;
      const n = f.slice(3).map(Number);
      if (!(n[4]! > 0)) continue;
      out.set(name, { writes: n[4]!, flushes: n[15] ?? 0, busyMs: n[9]! });
    }
  } catch {
    // not Linux
  }
  return out;
}

/** One line per disk: writes/s, cache flushes/s (each fsync ends in one) and % of the time busy. */
export function diskLine(before: Map<string, DiskCounters>, after: Map<string, DiskCounters>, seconds: number): string {
  const parts: string[] = [];
  for (const [name, a] of after) {
    const b = before.get(name);
    if (b === undefined) continue;
    parts.push(`${name} ${((a.writes - b.writes) / seconds).toFixed(0)} writes/s, ${((a.flushes - b.flushes) / seconds).toFixed(0)} flushes/s, busy ${((100 * (a.busyMs - b.busyMs)) / (1000 * seconds)).toFixed(0)} %`);
  }
  return parts.join('; ') || 'no disk counters';
}
