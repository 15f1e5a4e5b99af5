// The git provider's long-lived `git cat-file` per mirror, against real repositories: repeated
// reads on one process, only the pushed ref fetched, force-pushes, missing lock files, a killed
// process (idle, or under a request) replaced, a corrupt object as a clear error, hostile ref
// names that never reach git as anything but one ref, the process bound, idle close and shutdown.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { CatFilePool } from '../../../../plugins/providers/git/cat-file.ts';
import { GitMirrors, fetchableRef, type GitSource } from '../../../../plugins/providers/git/index.ts';
import { createGitRemote, git, type GitRemote, type Teardown } from '../../../fixtures/git-repos.ts';

const LOCK_PATH = '.svc/svc.lock.json';
const logger = pino({ level: 'silent' });

// The fetch path (a remote on another machine) unless a test turns borrowing on.
async function setup(t: Teardown, config: { catFileProcesses?: number; catFileIdleMs?: number; borrowLocalObjects?: boolean } = {}) {
  const cacheDir = await mkdtemp(join(tmpdir(), 'svc-git-catfile-'));
  t.teardown(() => rm(cacheDir, { recursive: true, force: true }));
  const mirrors = new GitMirrors({
    config: { cacheDir, fetchTimeoutMs: 60_000, readTimeoutMs: 30_000, maxLockFileBytes: 1024 * 1024, gitBinary: 'git', catFileProcesses: 16, catFileIdleMs: 300_000, borrowLocalObjects: false, ...config },
    logger,
  });
  t.teardown(() => mirrors.close());
  const remote = await createGitRemote(t);
  const source = (r: GitRemote = remote, id = 'source-1'): GitSource => ({ id, remoteUrl: r.url, repository: 'acme/app' });
  const text = async (s: GitSource, sha: string, ref?: string | null) => {
    const bytes = await mirrors.readLockFile(s, sha, ref);
    return bytes === null ? null : Buffer.from(bytes).toString();
  };
  return { mirrors, remote, source, text, cacheDir };
}

async function mirrorRefs(cacheDir: string): Promise<string[]> {
  const [dir] = await readdir(cacheDir);
  const out = await git(cacheDir, ['--git-dir', join(cacheDir, dir!), 'for-each-ref', '--format=%(refname)']);
  return out.split('\n').filter((l) => l !== '');
}

function exited(pid: number): boolean {
  return !existsSync(`/proc/${pid}`);
}

t.test('repeated reads go through one cat-file process; only the pushed ref is fetched', async (t) => {
  const { mirrors, remote, source, text, cacheDir } = await setup(t);
  const first = await remote.commit({ [LOCK_PATH]: 'lock 0' }, 'c0');
  await remote.push();
  await remote.push('HEAD:refs/heads/other');
  t.equal(await text(source(), first, 'refs/heads/main'), 'lock 0');
  const [pid] = mirrors.catFilePids();
  t.ok(pid, 'one cat-file process');
  t.same(await mirrorRefs(cacheDir), ['refs/heads/main'], 'the pushed ref alone was fetched, not refs/heads/other');
  for (let i = 1; i <= 3; i++) {
    const sha = await remote.commit({ [LOCK_PATH]: `lock ${i}` }, `c${i}`);
    await remote.push();
    t.equal(await text(source(), sha, 'refs/heads/main'), `lock ${i}`, `new commit ${i}`);
    t.equal(await text(source(), sha, 'refs/heads/main'), `lock ${i}`, `commit ${i} again (present: no fetch)`);
    t.equal(await text(source(), first), 'lock 0', 'the first commit still reads');
  }
  t.same(mirrors.catFilePids(), [pid], 'still the same process');
  // A tag push with its ref: the tag alone.
  const tagged = await remote.commit({ [LOCK_PATH]: 'tagged' }, 'tagged');
  await remote.git(['tag', 'v1']);
  await remote.push('refs/tags/v1:refs/tags/v1');
  t.equal(await text(source(), tagged, 'refs/tags/v1'), 'tagged');
  t.ok((await mirrorRefs(cacheDir)).includes('refs/tags/v1'));
  t.notOk((await mirrorRefs(cacheDir)).includes('refs/heads/other'), 'still no other branch');
});

t.test('force-pushes: the new commit reads; one the ref moved away from falls back to every branch, then the sha', async (t) => {
  const { remote, source, text } = await setup(t);
  const base = await remote.commit({ [LOCK_PATH]: 'base' }, 'base');
  const a = await remote.commit({ [LOCK_PATH]: 'a' }, 'a');
  await remote.push();
  t.equal(await text(source(), a, 'refs/heads/main'), 'a');
  await remote.git(['reset', '--quiet', '--hard', base]);
  const b = await remote.commit({ [LOCK_PATH]: 'b' }, 'b (rewritten)');
  await remote.push('+HEAD:refs/heads/main');
  t.equal(await text(source(), b, 'refs/heads/main'), 'b', 'the force-pushed commit');
  t.equal(await text(source(), a, 'refs/heads/main'), 'a', 'the replaced commit is still in the mirror');
  // c is pushed to a side branch and the hint names main, which does not hold it (the event's
  // ref moved on, or lied): the fetch of every branch finds it.
  const c = await remote.commit({ [LOCK_PATH]: 'c' }, 'c');
  await remote.push('HEAD:refs/heads/side');
  t.equal(await text(source(), c, 'refs/heads/main'), 'c', 'found through the fetch of every branch');
  // A ref that does not exist at the remote: the single fetch fails and the fallback finds it.
  const d = await remote.commit({ [LOCK_PATH]: 'd' }, 'd');
  await remote.push('HEAD:refs/heads/side');
  t.equal(await text(source(), d, 'refs/heads/gone'), 'd');
});

t.test('no lock file: no .svc, .svc without the lock, .svc a file, the lock path a directory or a submodule', async (t) => {
  const { remote, source, text, mirrors } = await setup(t);
  const cases: Array<[string, Record<string, string | null>]> = [
    ['no .svc', { 'README.md': 'x' }],
    ['.svc without the lock', { '.svc/other.json': '{}' }],
    ['.svc a file', { '.svc': 'not a directory' }],
    ['the lock path a directory', { [`${LOCK_PATH}/inner`]: 'x' }],
  ];
  for (const [what, files] of cases) {
    // Each case starts from a tree without .svc.
    await remote.git(['rm', '-r', '--quiet', '--ignore-unmatch', '.svc']);
    await rm(join(remote.work, '.svc'), { recursive: true, force: true });
    const sha = await remote.commit(files, what);
    await remote.push();
    t.equal(await text(source(), sha, 'refs/heads/main'), null, what);
  }
  await remote.git(['rm', '-r', '--quiet', '.svc']);
  await rm(join(remote.work, '.svc'), { recursive: true, force: true });
  await remote.git(['update-index', '--add', '--cacheinfo', `160000,${'1'.repeat(40)},${LOCK_PATH}`]);
  await remote.git(['commit', '--quiet', '-m', 'submodule at the lock path']);
  const gitlink = (await remote.git(['rev-parse', 'HEAD'])).trim();
  await remote.push();
  t.equal(await text(source(), gitlink), null, 'a submodule at the lock path');
  await remote.git(['rm', '--cached', '--quiet', LOCK_PATH]);
  // readFile walks the same way, at any depth.
  const deep = await remote.commit({ 'a/b/c/d.txt': 'deep', 'a/b/e': 'e' }, 'deep');
  await remote.push();
  t.equal(Buffer.from((await mirrors.readFile(source(), deep, 'a/b/c/d.txt'))!).toString(), 'deep');
  t.equal(await mirrors.readFile(source(), deep, 'a/b/e/d.txt'), null, 'a file where a directory is expected');
  t.equal(await mirrors.readFile(source(), deep, 'a/b/c'), null, 'a directory');
  t.equal(await mirrors.readFile(source(), deep, 'a/b/c/nope'), null);
});

t.test('a killed cat-file process is replaced: between reads and under a request', async (t) => {
  const { mirrors, remote, source, text } = await setup(t);
  const sha = await remote.commit({ [LOCK_PATH]: 'one' }, 'one');
  await remote.push();
  t.equal(await text(source(), sha, 'refs/heads/main'), 'one');
  const [first] = mirrors.catFilePids();
  process.kill(first!, 'SIGKILL');
  while (!exited(first!)) await new Promise((r) => setTimeout(r, 10));
  t.equal(await text(source(), sha), 'one', 'read after the kill');
  const [second] = mirrors.catFilePids();
  t.ok(second !== undefined && second !== first, 'a new process');
  // Stopped, then killed while a request waits on it: the request is sent again to a new process.
  process.kill(second!, 'SIGSTOP');
  const pending = text(source(), sha);
  await new Promise((r) => setTimeout(r, 50));
  process.kill(second!, 'SIGKILL');
  t.equal(await pending, 'one', 'the request under the kill is answered');
  const [third] = mirrors.catFilePids();
  t.ok(third !== undefined && third !== second, 'another process');
});

t.test('a corrupt object in the mirror is a clear error; the next read of a sound object works', async (t) => {
  const { remote, source, text, cacheDir } = await setup(t);
  const sha = await remote.commit({ [LOCK_PATH]: 'sound lock' }, 'one');
  await remote.push();
  t.equal(await text(source(), sha, 'refs/heads/main'), 'sound lock');
  const blob = (await remote.git(['rev-parse', `${sha}:${LOCK_PATH}`])).trim();
  const [dir] = await readdir(cacheDir);
  const loose = join(cacheDir, dir!, 'objects', blob.slice(0, 2), blob.slice(2));
  t.ok(existsSync(loose), 'a small fetch leaves loose objects');
  await chmod(loose, 0o644);
  await writeFile(loose, 'not a zlib stream');
  await t.rejects(text(source(), sha), { code: 'SVC_ERR_GIT_READ', message: new RegExp(`${blob}|corrupt|inflate|unable`) }, 'names what git said');
  const next = await remote.commit({ [LOCK_PATH]: 'next lock' }, 'two');
  await remote.push();
  t.equal(await text(source(), next, 'refs/heads/main'), 'next lock', 'a later read on a new process');
});

t.test('hostile ref names never reach git as an option, a second refspec or a glob; the read still works', async (t) => {
  const { remote, source, text, cacheDir } = await setup(t);
  const marker = join(remote.root, 'pwned');
  const hostile = [
    `--upload-pack=touch ${marker}`,
    `refs/heads/--upload-pack=touch ${marker}`,
    'refs/heads/main:refs/heads/evil',
    '+refs/heads/*:refs/heads/*',
    'refs/heads/*',
    '^refs/heads/main',
    'refs/heads/main\nrefs/heads/evil',
    'refs/heads/../../evil',
    'refs/heads/.hidden',
    'refs/heads/main.lock',
    'refs/heads/main@{1}',
    'refs/heads/a//b',
    'refs/heads/main/',
    'refs/heads/main.',
    'refs/heads/ma in',
    'refs/heads/ma\\in',
    'refs/heads/ma?n',
    'refs/heads/ma[n',
    'refs/heads/ma~1',
    'refs/remotes/origin/main',
    'refs/heads/',
    'HEAD',
    'main',
    `$(touch ${marker})`,
    '',
    'x'.repeat(2000),
  ];
  for (const ref of hostile) t.equal(fetchableRef(ref), null, `refused: ${JSON.stringify(ref.slice(0, 60))}`);
  // Through a read: an option, a second refspec, a glob, a line break (each a new commit, so a fetch).
  for (const [i, ref] of hostile.slice(0, 4).concat(hostile[6]!).entries()) {
    const sha = await remote.commit({ [LOCK_PATH]: `lock ${i}` }, `c${i}`);
    await remote.push();
    t.equal(await text(source(), sha, ref), `lock ${i}`, 'read through the fetch of every branch');
  }
  t.equal(fetchableRef(42), null);
  t.notOk(existsSync(marker), 'nothing ran');
  t.notOk((await mirrorRefs(cacheDir)).some((r) => r.includes('evil')), 'no ref named by the hostile text');
  for (const ok of ['refs/heads/main', 'refs/heads/feature/a-b_c', 'refs/tags/v1.0.0', 'refs/heads/ünïcode', 'refs/heads/-dash', "refs/heads/it's;$x"]) {
    t.equal(fetchableRef(ok), ok, `accepted: ${ok}`);
    t.equal(await git(remote.root, ['check-ref-format', ok]).then(() => true, () => false), true, `git accepts ${ok} too`);
  }
  // A plain name git accepts that starts with "-" is fetched as its own ref, never read as an option.
  const dashed = await remote.commit({ [LOCK_PATH]: 'dashed' }, 'dashed');
  await remote.push('HEAD:refs/heads/-dash');
  t.equal(await text(source(), dashed, 'refs/heads/-dash'), 'dashed');
  t.ok((await mirrorRefs(cacheDir)).includes('refs/heads/-dash'));
});

t.test('at most catFileProcesses processes; an idle one is closed; close() ends them all', async (t) => {
  const { mirrors, remote, source, text } = await setup(t, { catFileProcesses: 2, catFileIdleMs: 100 });
  const others = [await createGitRemote(t), await createGitRemote(t)];
  const shas: string[] = [];
  for (const [i, r] of [remote, ...others].entries()) {
    shas.push(await r.commit({ [LOCK_PATH]: `repo ${i}` }));
    await r.push();
  }
  const seen = new Set<number>();
  for (let round = 0; round < 2; round++) {
    const reads = [remote, ...others].map((r, i) => text(source(r, `source-${i}`), shas[i]!, 'refs/heads/main'));
    t.same(await Promise.all(reads), ['repo 0', 'repo 1', 'repo 2'], `round ${round}: three mirrors read at once`);
    const pids = mirrors.catFilePids();
    t.ok(pids.length <= 2, `at most two processes (${pids.length})`);
    for (const pid of pids) seen.add(pid);
  }
  // Idle: a process unused for catFileIdleMs (100 ms) is closed.
  const deadline = Date.now() + 10_000;
  while (mirrors.catFilePids().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.same(mirrors.catFilePids(), [], 'idle processes closed');
  // close(): the processes have exited when it resolves, and later reads are refused.
  t.equal(await text(source(), shas[0]!), 'repo 0');
  const open = mirrors.catFilePids();
  t.equal(open.length, 1);
  await mirrors.close();
  t.ok(open.every(exited), 'exited at close');
  t.ok([...seen].every(exited), 'every process seen has exited');
  await t.rejects(text(source(), shas[0]!), { code: 'SVC_ERR_GIT_READ', message: /shut down/ });
});

t.test('the pool answers concurrent requests on one process in order; a name that is not an object id never reaches git', async (t) => {
  const remote = await createGitRemote(t);
  const files: Record<string, string> = {};
  for (let i = 0; i < 40; i++) files[`f${i}.txt`] = `content ${i} `.repeat(i * 50);
  await remote.commit(files);
  const gitDir = join(remote.work, '.git');
  const listing = new Map((await remote.git(['ls-tree', 'HEAD'])).split('\n').filter((l) => l !== '').map((l) => [l.split('\t')[1]!, l.split(/\s+/)[2]!]));
  const blobs = Object.keys(files).map((f) => listing.get(f)!);
  const pool = new CatFilePool({ gitBinary: 'git', maxProcesses: 1, idleMs: 60_000, timeoutMs: 30_000, logger });
  t.teardown(() => pool.close());
  const answers = await Promise.all(blobs.flatMap((oid) => [pool.contents(gitDir, oid), pool.info(gitDir, oid)]));
  let right = 0;
  Object.values(files).forEach((content, i) => {
    const contents = answers[2 * i]!;
    const info = answers[2 * i + 1]!;
    if (contents.found && contents.data?.toString() === content && info.found && info.size === Buffer.byteLength(content) && info.data === undefined) right += 1;
  });
  t.equal(right, 40, '80 answers, each to its own request');
  t.same(await pool.info(gitDir, 'f'.repeat(40)), { found: false }, 'missing');
  t.equal(pool.pids().length, 1);
  for (const bad of ['HEAD', `${blobs[0]}:f0.txt`, `${blobs[0]}\ninfo ${blobs[1]}`, '--batch-all-objects', `${blobs[0]}^{blob}`]) {
    await t.rejects(pool.info(gitDir, bad), /not an object id/, JSON.stringify(bad));
  }
  t.same(await pool.info(gitDir, `${blobs[0]}`), { found: true, oid: blobs[0], type: 'blob', size: 0 }, 'the process still answers');
});

t.test('a local remote is read in place: no fetch; loose objects and packs, a work tree remote, force-pushes, diffs', async (t) => {
  const { mirrors, remote, source, text, cacheDir } = await setup(t, { borrowLocalObjects: true });
  const first = await remote.commit({ [LOCK_PATH]: 'one', 'a.txt': 'a' }, 'one');
  await remote.push();
  t.equal(await text(source(), first, 'refs/heads/main'), 'one');
  const second = await remote.commit({ [LOCK_PATH]: 'two', 'b.txt': 'b' }, 'two');
  await remote.push();
  const [pid] = mirrors.catFilePids();
  t.equal(await text(source(), second, 'refs/heads/main'), 'two', 'a loose object pushed after the reader started');
  // A push kept as a pack at the remote: the running reader finds the new pack.
  await git(remote.root, ['--git-dir', remote.bare, 'config', 'receive.unpackLimit', '1']);
  const packed = await remote.commit({ [LOCK_PATH]: 'packed' }, 'packed');
  await remote.push();
  t.ok((await readdir(join(remote.bare, 'objects', 'pack'))).some((f) => f.endsWith('.pack')), 'the remote holds a pack');
  t.equal(await text(source(), packed, 'refs/heads/main'), 'packed', 'an object in a pack pushed after the reader started');
  t.same(mirrors.catFilePids(), [pid], 'the same reader throughout');
  t.same(await mirrors.changedFiles(source(), first, second), ['.svc/svc.lock.json', 'b.txt'], 'diffs read the remote in place too');
  // Force-push: the replaced commit stays readable while the remote keeps it.
  await remote.git(['reset', '--quiet', '--hard', first]);
  const rewritten = await remote.commit({ [LOCK_PATH]: 'rewritten' }, 'rewritten');
  await remote.push('+HEAD:refs/heads/main');
  t.equal(await text(source(), rewritten, 'refs/heads/main'), 'rewritten');
  t.equal(await text(source(), second), 'two');
  t.same(await mirrorRefs(cacheDir), [], 'nothing was fetched: the mirror has no refs');
  // A sha the remote does not have: the fetch path, then the usual error.
  const local = await remote.commit({ b: '2' }, 'never pushed');
  await t.rejects(text(source(), 'e'.repeat(40)), { code: 'SVC_ERR_GIT_UNKNOWN_SHA' });
  // A work tree (non-bare) remote: its .git/objects. The clone has the unpushed commit.
  t.equal(await text(source({ ...remote, url: remote.work }, 'work-tree-source'), local), 'rewritten', 'the work tree commit read in place (its lock is unchanged)');
});
