// Pieces the peers bench shares between its systems: the test repository (a working clone and a
// bare repository every system reads, one new commit per change), the GitHub-shaped push body
// announced for a commit (the one svc's post-receive hook builds), waiting, percentiles, and the
// proportional memory (PSS) of process trees from /proc.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { buildPushPayload } from '../../../cli/git-hook/push-payload.ts';
import { hookGit } from '../../../cli/git-hook/git.ts';

/** Each case is a branch: svc's workflows and Buildbot's schedulers each match one. */
export type PushCase = 'bare' | 'checkout' | 'nomatch';

/** Wall-clock ms with sub-ms precision (the clock PostgreSQL's now() and Python's time.time() read). */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export function quantile(xs: readonly number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

export const ms = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(x < 10 ? 1 : 0)} ms` : '–');

/** p50 / p90 / max of a series, with its n. */
export function spread(xs: readonly number[]): string {
  return `p50 ${ms(quantile(xs, 0.5))}  p90 ${ms(quantile(xs, 0.9))}  max ${ms(Math.max(...xs))}  (n=${xs.length})`;
}

export const REPOSITORY = 'local/app';
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@example.test', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@example.test',
  GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0',
};

export function git(cwd: string, args: string[]): string {
  return execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** The test repository: `work` (named `app`, as svc dev names its repository `local/app`) and its bare `remote`. */
export interface TestRepository {
  work: string;
  bare: string;
  /** One new commit (one changed file) on top of the last; its sha. */
  commit(): string;
  /** Points `refs/heads/<case>` of the bare repository at `sha`; the ref's previous sha (zeros when new). */
  publish(sha: string, branch: PushCase): string;
  /** The GitHub-shaped push body of `before..sha` on the branch, as svc's post-receive hook builds it. */
  pushBody(before: string, sha: string, branch: PushCase): Promise<Buffer>;
}

export function createTestRepository(root: string, files: Record<string, string>, prepare: (work: string) => void = () => undefined): TestRepository {
  const work = join(root, 'app');
  const bare = join(root, 'app.git');
  execFileSync('git', ['init', '--quiet', '--bare', '--initial-branch=main', bare], { env: GIT_ENV });
  execFileSync('git', ['init', '--quiet', '--initial-branch=main', work], { env: GIT_ENV });
  for (const [path, content] of Object.entries(files)) {
    execFileSync('mkdir', ['-p', join(work, path, '..')]);
    writeFileSync(join(work, path), content);
  }
  prepare(work);
  git(work, ['add', '--all']);
  git(work, ['commit', '--quiet', '-m', 'bench repository']);
  git(work, ['push', '--quiet', bare, 'HEAD:refs/heads/main']);
  let n = 0;
  const hook = hookGit(bare, GIT_ENV);
  return {
    work,
    bare,
    commit() {
      n += 1;
      writeFileSync(join(work, 'change.txt'), `change ${n} ${Date.now()}\n`);
      git(work, ['add', 'change.txt']);
      git(work, ['commit', '--quiet', '-m', `change ${n}`]);
      return git(work, ['rev-parse', 'HEAD']).trim();
    },
    publish(sha, branch) {
      let before = '0'.repeat(40);
      try {
        before = git(bare, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]).trim();
      } catch {
        // a new branch
      }
      git(work, ['push', '--quiet', '--force', bare, `${sha}:refs/heads/${branch}`]);
      return before;
    },
    async pushBody(before, sha, branch) {
      const payload = await buildPushPayload(hook, { repository: REPOSITORY, remoteUrl: `file://${bare}`, defaultBranch: 'main', webhookUrl: 'http://unused', secret: '', sourceId: 'unused', timeoutMs: 15_000 }, { before, after: sha, ref: `refs/heads/${branch}` }, { USER: 'bench' });
      // Buildbot's github hook reads `repository.html_url` (svc ignores it).
      (payload['repository'] as Record<string, unknown>)['html_url'] = `file://${bare}`;
      return Buffer.from(JSON.stringify(payload));
    },
  };
}

/** PSS in KiB of one process (smaps_rollup), 0 when it is gone. */
export function pssKiB(pid: number): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Every process: pid → { ppid, comm }. */
function processTable(): Map<number, { ppid: number; comm: string }> {
  const out = new Map<number, { ppid: number; comm: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.set(Number(entry), { ppid, comm });
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

/** The roots and all their descendants, split into PostgreSQL processes and the rest. */
export function processTree(roots: readonly number[]): { programs: number[]; postgres: number[] } {
  const table = processTable();
  const seen = new Set<number>();
  const queue = roots.filter((pid) => table.has(pid));
  while (queue.length > 0) {
    const pid = queue.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    for (const [child, info] of table) if (info.ppid === pid) queue.push(child);
  }
  const programs: number[] = [];
  const postgres: number[] = [];
  for (const pid of seen) (table.get(pid)?.comm === 'postgres' ? postgres : programs).push(pid);
  return { programs, postgres };
}

export const mibOf = (pids: readonly number[]): number => pids.reduce((sum, pid) => sum + pssKiB(pid), 0) / 1024;

/** Each named root's PSS and its descendants' (PostgreSQL apart), for the memory line's detail. */
export function treeDetail(roots: ReadonlyArray<readonly [string, number]>): string {
  return roots
    .map(([label, pid]) => {
      const own = pssKiB(pid) / 1024;
      const children = mibOf(processTree([pid]).programs.filter((p) => p !== pid));
      return `${label} ${own.toFixed(0)}${children >= 0.5 ? ` + ${children.toFixed(0)} (its children)` : ''}`;
    })
    .join(', ');
}
