// The git provider's lock read of a newly pushed commit, the step that takes most of a git
// source's webhook answer (docs/benchmarks.md, "Where the time goes"). A bare repository with a
// few branches; each round commits a new lock file to one branch, pushes it, then reads the lock
// at the new sha through GitMirrors, as the orchestrator's ingest does (with the pushed ref).
// With --before DIR (an extracted tree of an earlier commit, node_modules linked in), the
// GitMirrors of that tree reads the same commit in the same round, in alternating order, each
// through its own mirror: a side-by-side comparison under the same load. `fetch` is this tree
// with borrowLocalObjects off (the path of a remote on another machine). Figures only.
//   node bench/git-lock-read.ts [--pushes N] [--branches B] [--before DIR] [--busy]
// An earlier tree: mkdir /tmp/svc-before && git archive <rev> | tar -x -C /tmp/svc-before &&
//   ln -s "$PWD/node_modules" /tmp/svc-before/node_modules
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { GitMirrors, type GitSource } from '../plugins/providers/git/index.ts';
import { createGitRemote } from '../test/fixtures/git-repos.ts';
import { percentile, withMachine } from './lib/machine.ts';

const { values } = parseArgs({
  options: {
    pushes: { type: 'string', default: '30' },
    branches: { type: 'string', default: '4' },
    before: { type: 'string' },
    busy: { type: 'boolean', default: false },
  },
});
const PUSHES = Math.max(1, Math.min(1000, Number(values.pushes)));
const BRANCHES = Math.max(1, Math.min(100, Number(values.branches)));

interface Reader {
  name: string;
  read(source: GitSource, sha: string, ref: string): Promise<Uint8Array | null>;
  close(): Promise<void>;
}

const teardowns: Array<() => unknown> = [];
const logger = pino({ level: 'silent' });

async function reader(name: string, Mirrors: typeof GitMirrors, borrowLocalObjects = true): Promise<Reader> {
  const cacheDir = await mkdtemp(join(tmpdir(), `svc-bench-lock-read-${name}-`));
  teardowns.push(() => rm(cacheDir, { recursive: true, force: true }));
  // Both versions get every key; an older GitMirrors ignores the ones it does not know.
  const config = { cacheDir, fetchTimeoutMs: 120_000, readTimeoutMs: 30_000, maxLockFileBytes: 32 * 1024 * 1024, gitBinary: 'git', catFileProcesses: 16, catFileIdleMs: 300_000, borrowLocalObjects };
  const mirrors = new Mirrors({ config, logger }) as GitMirrors & { close?: () => Promise<void> };
  return {
    name,
    read: (source, sha, ref) => mirrors.readLockFile(source, sha, ref),
    close: async () => mirrors.close?.(),
  };
}

async function main(): Promise<void> {
  // after: the local remote's objects read in place; fetch: the same code fetching the pushed ref
  // (as for a remote on another machine).
  const readers = [await reader('fetch', GitMirrors, false), await reader('after', GitMirrors)];
  if (values.before !== undefined) {
    const url = pathToFileURL(join(resolve(values.before), 'plugins/providers/git/mirror.ts')).href;
    const before = (await import(url)) as { GitMirrors: typeof GitMirrors };
    readers.unshift(await reader('before', before.GitMirrors));
  }
  const remote = await createGitRemote({ teardown: (fn) => teardowns.push(fn) });
  const branches = Array.from({ length: BRANCHES }, (_, i) => `branch-${i}`);
  await remote.commit({ '.svc/svc.lock.json': '{"start":true}' }, 'start');
  for (const b of branches) await remote.push(`HEAD:refs/heads/${b}`);
  const source: GitSource = { id: 'bench-source', remoteUrl: remote.url, repository: 'acme/app' };
  // Warm-up (not counted): each reader makes its mirror and fetches everything once.
  const head = (await remote.git(['rev-parse', 'HEAD'])).trim();
  for (const r of readers) await r.read(source, head, `refs/heads/${branches[0]}`);

  const times = new Map(readers.map((r) => [r.name, [] as number[]]));
  for (let i = 0; i < PUSHES; i++) {
    const branch = branches[i % branches.length]!;
    const sha = await remote.commit({ '.svc/svc.lock.json': `{"push":${i}}` }, `push ${i}`);
    await remote.push(`HEAD:refs/heads/${branch}`);
    const order = i % 2 === 0 ? readers : [...readers].reverse();
    for (const r of order) {
      const started = performance.now();
      const bytes = await r.read(source, sha, `refs/heads/${branch}`);
      times.get(r.name)!.push(performance.now() - started);
      if (Buffer.from(bytes ?? []).toString() !== `{"push":${i}}`) throw new Error(`${r.name} read the wrong lock at ${sha}`);
    }
  }
  for (const r of readers) await r.close();

  process.stdout.write(`lock read of a newly pushed commit (${PUSHES} pushes over ${BRANCHES} branches, file:// remote), ms:\n`);
  const p50 = new Map<string, number>();
  for (const [name, list] of times) {
    const sorted = [...list].sort((a, b) => a - b);
    p50.set(name, percentile(sorted, 50));
    process.stdout.write(`  ${name.padEnd(6)} p50 ${percentile(sorted, 50).toFixed(1)}  p90 ${percentile(sorted, 90).toFixed(1)}  max ${sorted.at(-1)!.toFixed(1)}\n`);
  }
  if (p50.has('before')) {
    process.stdout.write(`  fetch (the pushed ref, one git process) is ${(p50.get('before')! / p50.get('fetch')!).toFixed(2)}x faster than before at p50\n`);
    process.stdout.write(`  after (a local remote read in place) is ${(p50.get('before')! / p50.get('after')!).toFixed(2)}x faster than before at p50\n`);
  }
}

try {
  await withMachine(values.busy, 600, main);
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
