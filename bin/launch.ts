// Every bin goes through here: refuse old Node with one clear line before any module that
// needs Node 24 is loaded (a static import would fail first with an obscure syntax error).
const [major] = process.versions.node.split('.').map(Number);
if ((major ?? 0) < 24) {
  process.stderr.write(
    `svc needs Node.js 24 or newer (this is ${process.version}). ` +
      'Run it through npm (npm exec / npm run), which puts the bundled Node 24 first on PATH, ' +
      'or install Node 24.\n',
  );
  process.exit(1);
}

// Cache compiled code between runs (~0.2 s CPU per CLI invocation); harmless where unsupported.
try {
  const { enableCompileCache } = (await import('node:module')) as { enableCompileCache?: (dir?: string) => unknown };
  if (enableCompileCache !== undefined && process.env['NODE_DISABLE_COMPILE_CACHE'] === undefined) {
    // NODE_COMPILE_CACHE, when set, is the user's own choice and Node honours it.
    const { compileCacheDir } = await import(new URL(`./compile-cache${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href);
    const dir = process.env['NODE_COMPILE_CACHE'] ?? (compileCacheDir(process.env) as string | undefined);
    if (dir !== undefined) enableCompileCache(dir);
  }
} catch {
  // best effort only
}

/** The long-running servers; the CLIs are short-lived and keep V8's defaults. */
const SERVERS = new Set(['./roots/orchestrator', './roots/relay', './roots/agent']);

/** Young generation size the servers keep to (both semi-spaces; V8 lets it grow to 64 MB). */
const YOUNG_GENERATION_CAP_BYTES = 16 * 1024 * 1024;

/**
 * Garbage-collection settings of the servers, applied at run time so they hold however the bin
 * is started (`svc-orchestrator`, `node dist/bin/...`, a test's spawn). Both are from issue 19's
 * profile of the orchestrator at 200 webhooks/s:
 * - V8 sizes the old generation from the live heap times a growing factor it picks from early
 *   measurements, and about half the time it picked ~1.3: with ~45 MB live, a full mark-compact
 *   every second, whose marking takes a second core and whose pause stalls every delivery in
 *   flight (ten in a 10 s phase). A fixed factor of 3 (V8's own range is 1.1 to 4) leaves one.
 * - The young generation grew to 64 MB, and its scavenges then paused for over 10 ms a few times
 *   a phase. Capped near 16 MB they run more often, all under 10 ms (with
 *   `--max-semi-space-size=8` the share answered within 25 ms rose from ~97 % to ~99.5 %). That
 *   flag only counts at start-up, so the cap is kept by turning growth off at the size and on
 *   below it (V8 shrinks the young generation when allocation slows).
 */
export async function tuneServerHeap(): Promise<void> {
  const v8 = await import('node:v8');
  v8.setFlagsFromString('--heap-growing-percent=200');
  let growing = true;
  const keepYoungGeneration = (): void => {
    const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
    const grow = young === undefined || young.space_size < YOUNG_GENERATION_CAP_BYTES;
    if (grow === growing) return;
    growing = grow;
    v8.setFlagsFromString(grow ? '--semi-space-growth-factor=2' : '--semi-space-growth-factor=1');
  };
  keepYoungGeneration();
  setInterval(keepYoungGeneration, 250).unref();
}

/**
 * The orchestrator's libuv pool threads do its background file work: event-log payload objects
 * and their fsyncs (written after the ack), storage puts, large gzips. None of it is on a
 * webhook's way to its answer, so on Linux they run at nice +10 and yield the CPU to the event
 * loop and the database on a busy machine, using idle time otherwise (measured under `--busy`:
 * docs/benchmarks.md). Other threads and processes keep their priority; lowering one's own
 * threads' priority needs no privilege.
 */
export async function lowerThreadpoolPriority(): Promise<void> {
  if (process.platform !== 'linux') return;
  const fs = await import('node:fs');
  const os = await import('node:os');
  // libuv starts the whole pool at its first request: make one, then the threads exist.
  await fs.promises.stat('/');
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      if (fs.readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === 'libuv-worker') os.setPriority(Number(tid), THREADPOOL_NICE);
    } catch {
      // A thread that ended meanwhile, or a kernel that refuses: the priority stays as it was.
    }
  }
}

/** The nice value of the orchestrator's libuv pool threads. */
export const THREADPOOL_NICE = 10;

/** Import `<relative>.ts` next to the sources, or `<relative>.js` in the compiled tree. */
export async function launch(from: string, relative: string): Promise<void> {
  if (SERVERS.has(relative)) await tuneServerHeap();
  if (relative === './roots/orchestrator') await lowerThreadpoolPriority();
  const { useVendorBundles } = await import(new URL(`./vendor-hooks${from.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url).href);
  useVendorBundles(import.meta.url);
  const ext = from.endsWith('.ts') ? '.ts' : '.js';
  const mod = (await import(new URL(relative + ext, from).href)) as { main: (argv: string[]) => Promise<number | void> };
  const code = await mod.main(process.argv.slice(2));
  if (typeof code === 'number') process.exitCode = code;
  if (SERVERS.has(relative)) {
    const { exitAfterStop } = await import(new URL(`../core/lifecycle${ext}`, import.meta.url).href);
    exitAfterStop(from.slice(from.lastIndexOf('/') + 1, -ext.length), typeof code === 'number' ? code : 0);
  }
}
