// Runs a tier's test files, a few at a time, each in its own Node process, and reports each file as
// one TAP line (`ok 3 - test/x.test.ts # time=812ms`); a failed file's whole output follows its line.
//
// Why not tap's runner: it loads tap's process-info module (an ESM loader thread that sees every
// import), its mock loader and source maps into every test process, which costs each file about a
// second of CPU before its first assertion; our files need none of that. tap stays the test
// library: each file is a tap script that prints TAP and exits non-zero when an assertion fails.
import { spawn } from 'node:child_process';
import { topLevelSubtests, type Subtest } from './junit.ts';

export interface FileResult {
  file: string;
  seconds: number;
  ok: boolean;
  /** tap's closing count of the file's assertions (total, pass, fail, skip, todo), when it printed one. */
  counts: Record<string, number>;
  /** Why the file failed, when its assertions do not say: a hang guard, a signal, a missing count. */
  reason?: string;
  /** A failed file's whole output (stdout and stderr as they came): what a reader of the log needs. */
  output?: string;
  /** The file's top-level subtests with their verdicts and times (the JUnit report's test cases). */
  subtests: Subtest[];
}

export interface RunOptions {
  root: string;
  files: readonly string[];
  jobs: number;
  /** The hang guard per file, in seconds (also tap's own per-file timeout, TAP_TIMEOUT). */
  timeout: number;
  env: NodeJS.ProcessEnv;
  /** Modules every test process loads first (`--import`). */
  imports: readonly string[];
  /** How long past `timeout` a file that tap cannot end (a busy loop) runs before it is stopped; 30 s by default. */
  guardMarginSeconds?: number;
  /** Ends each file's line (`[system]`), when tiers run side by side. */
  tag?: string;
  /** Where each file's line and a failed file's output go. */
  write: (text: string) => void;
}

/** The grace between asking a hung file to stop (SIGTERM to its process group) and killing it. */
const KILL_GRACE_MS = 5_000;

/** The closing `# { total: 12, pass: 11, fail: 1 }` line tap prints at a file's end. */
function parseCounts(output: string): Record<string, number> {
  const match = /^# \{ ([^}]*) \}$/m.exec(output.slice(-4_096));
  const counts: Record<string, number> = {};
  for (const part of match?.[1]?.split(',') ?? []) {
    const [key, value] = part.split(':').map((s) => s.trim());
    if (key && value && /^\d+$/.test(value)) counts[key] = Number(value);
  }
  return counts;
}

function runOne(options: RunOptions, file: string): Promise<FileResult> {
  const started = performance.now();
  const child = spawn(process.execPath, [...options.imports.map((m) => `--import=${m}`), file], {
    cwd: options.root,
    env: { ...options.env, TAP_TIMEOUT: String(options.timeout) },
    // Its own process group, so a hang guard ends the programs the file started too.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
  let guard: string | undefined;
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  // tap ends a file at TAP_TIMEOUT by itself; this is the guard for a file that does not.
  const guardSeconds = options.timeout + (options.guardMarginSeconds ?? 30);
  const timer = setTimeout(() => {
    guard = `still running after ${guardSeconds} s (the hang guard): stopped`;
    killGroup('SIGTERM');
    setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS).unref();
  }, guardSeconds * 1000);
  running.add(killGroup);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(killGroup);
      const output = Buffer.concat(chunks).toString('utf8');
      const counts = parseCounts(output);
      let reason = guard;
      if (reason === undefined && signal !== null) reason = `ended by ${signal}`;
      if (reason === undefined && code !== 0 && !counts['fail']) reason = `exited with code ${code ?? '?'} and no failed assertion`;
      if (reason === undefined && code === 0 && counts['total'] === undefined) reason = 'exited without tap\'s closing count (the file ended early)';
      const ok = code === 0 && reason === undefined;
      const seconds = (performance.now() - started) / 1000;
      resolve({ file, seconds, ok, counts, subtests: topLevelSubtests(output), ...(reason === undefined ? {} : { reason }), ...(ok ? {} : { output }) });
    });
  });
}

/** Every running file's process-group killer, so an interrupted run stops what it started. */
const running = new Set<(signal: NodeJS.Signals) => void>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const kill of running) kill('SIGKILL');
    process.exit(130);
  });
}

/** Runs the files `jobs` at a time, in the order given; resolves once all have ended. */
export async function runFiles(options: RunOptions): Promise<FileResult[]> {
  const results: FileResult[] = [];
  let next = 0;
  let reported = 0;
  options.write(`TAP version 14\n1..${options.files.length}\n`);
  const worker = async (): Promise<void> => {
    while (next < options.files.length) {
      const file = options.files[next] as string;
      next += 1;
      const result = await runOne(options, file);
      results.push(result);
      reported += 1;
      const counts = Object.entries(result.counts).map(([k, v]) => `${k} ${v}`).join(', ');
      options.write(`${result.ok ? 'ok' : 'not ok'} ${reported} - ${file} # time=${(result.seconds * 1000).toFixed(0)}ms${counts ? ` (${counts})` : ''}${result.reason ? ` ${result.reason}` : ''}${options.tag ? ` [${options.tag}]` : ''}\n`);
      if (result.output !== undefined) options.write(`${result.output.replace(/^/gm, '    ').trimEnd()}\n`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.jobs, options.files.length)) }, () => worker()));
  return results;
}
