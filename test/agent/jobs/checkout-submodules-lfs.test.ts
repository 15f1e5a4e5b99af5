// `checkout.submodules` and `checkout.lfs` end to end: a lock job's checkout settings go through
// the real orchestrator's dispatch (real PostgreSQL) to a real agent, whose repository store (and,
// at depth 0, the per-job fetch) writes the workspace the job's step then reports on. Real git
// repositories over file:// — a superproject whose submodule has a submodule of its own, both
// recorded by relative URLs, and a real LFS object served by git-lfs's standalone file transfer —
// and hostile `.gitmodules` entries that must be refused before anything of them is fetched.
import { existsSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { storeKey } from '../../../agent/jobs/repo-store.ts';
import { resolveSubmoduleUrl, submoduleAuth } from '../../../agent/jobs/submodules.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { git } from '../../fixtures/git-repos.ts';
import { insertRun, jobRow, until } from '../../fixtures/runs.ts';
import { startNode } from '../../kernel/orchestrator/dispatch/harness.ts';
import { launchAgent } from '../fixtures/agent-harness.ts';
import { makeTree, tempDir } from '../fixtures/trees.ts';

const LFS_CONTENT = 'the real content of a large file\n';

/** A repository (non-bare: a file:// remote) with `files` committed; returns its dir and commit. */
async function repo(dir: string, files: Record<string, string>, init = true): Promise<string> {
  if (init) await git(dir, ['init', '-q', '-b', 'main']);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  await git(dir, ['add', '-A']);
  await git(dir, ['commit', '-q', '--allow-empty', '-m', 'commit']);
  return (await git(dir, ['rev-parse', 'HEAD'])).trim();
}

/** Records a submodule by hand (.gitmodules entry + gitlink), as `git submodule add` would. */
async function recordSubmodule(dir: string, entry: { name: string; path: string; url: string }, sha: string): Promise<void> {
  await git(dir, ['config', '-f', '.gitmodules', `submodule.${entry.name}.path`, entry.path]);
  await git(dir, ['config', '-f', '.gitmodules', `submodule.${entry.name}.url`, entry.url]);
  if (entry.path.startsWith('..')) return; // git refuses such a gitlink path: only .gitmodules can name it
  await git(dir, ['update-index', '--add', '--cacheinfo', `160000,${sha},${entry.path}`]);
  // An empty directory, as an uninitialised submodule leaves it (`git add -A` keeps the gitlink).
  await mkdir(join(dir, entry.path), { recursive: true });
}

t.test('submodule URLs: relative resolution and the transport policy', async (t) => {
  const ok = (raw: string, base: string) => resolveSubmoduleUrl(raw, base);
  t.same(ok('../lib.git', 'https://git.example/org/app.git'), { url: 'https://git.example/org/lib.git', protocol: 'https' });
  t.same(ok('./lib', 'https://git.example/org/app.git/'), { url: 'https://git.example/org/app.git/lib', protocol: 'https' });
  t.same(ok('../lib.git', 'git@git.example:org/app.git'), { url: 'git@git.example:org/lib.git', protocol: 'ssh' });
  t.same(ok('../lib', '/srv/git/app'), { url: '/srv/git/lib', protocol: 'file' });
  t.same(ok('git://git.example/lib', 'https://git.example/app'), { url: 'git://git.example/lib', protocol: 'git' });
  t.same(ok('http://git.example/lib', 'http://git.example/app'), { url: 'http://git.example/lib', protocol: 'http' }, 'plain http on the clone URL\'s own origin');
  const refused = (raw: string, base: string, why: RegExp) => {
    const got = resolveSubmoduleUrl(raw, base);
    t.ok('why' in got && why.test(got.why), `${raw} refused (${'why' in got ? got.why : 'accepted'})`);
  };
  refused('ext::sh -c touch% /tmp/x', 'https://git.example/app', /transport helper \(ext::\)/);
  refused('fd::3', 'https://git.example/app', /transport helper/);
  refused('--upload-pack=touch /tmp/x', 'https://git.example/app', /command-line option/);
  refused('ssh://-oProxyCommand=sh/x', 'https://git.example/app', /command-line option/);
  refused('-oProxyCommand=x@host:path', 'https://git.example/app', /command-line option/);
  refused('file:///srv/git/secret', 'https://git.example/app', /local path, allowed only when the job's repository is itself local/);
  refused('/srv/git/secret', 'https://git.example/app', /local path/);
  refused('http://other.example/lib', 'https://git.example/app', /plain http/);
  refused('ftp://git.example/lib', 'https://git.example/app', /transport ftp/);
  refused('../../../x', 'https://git.example/org/app', /climbs above/);
  refused('lib', 'https://git.example/app', /neither a URL/);
  refused('https://git.example/a\nb', 'https://git.example/app', /control characters/);

  // The main clone's credential, only to its own origin.
  const parent = { cloneUrl: 'https://git.example/org/app.git', token: 'tok', username: 'x-access-token' };
  t.same(submoduleAuth(parent, 'https://git.example/org/lib.git'), { cloneUrl: 'https://git.example/org/lib.git', token: 'tok', username: 'x-access-token' });
  t.same(submoduleAuth(parent, 'https://other.example/lib.git'), { cloneUrl: 'https://other.example/lib.git' }, 'another host gets no credential');
  t.same(submoduleAuth(parent, 'git@git.example:org/lib.git'), { cloneUrl: 'git@git.example:org/lib.git' }, 'nor does ssh (the header is http)');
});

t.test('submodules and LFS through dispatch to the agent', async (t) => {
  await eachDatabase(t, async (t, db) => {
    // The orchestrator starts while the repositories are made.
    const starting = startNode(t, db.url);
    const tmp = await tempDir('svc-submodules-');
    t.teardown(tmp.cleanup);

    // nested ← sub ← super; the superproject records sub at its first commit, then sub moves on.
    const root = join(tmp.dir, 'repos');
    await mkdir(join(root, 'nested'), { recursive: true });
    await mkdir(join(root, 'sub'), { recursive: true });
    const nestedSha = await repo(join(root, 'nested'), { 'deep.txt': 'deep' });
    await repo(join(root, 'sub'), { 'inner.txt': 'inner at the recorded commit' });
    await recordSubmodule(join(root, 'sub'), { name: 'nested', path: 'nested', url: '../nested' }, nestedSha);
    const subSha = await repo(join(root, 'sub'), {}, false);
    await repo(join(root, 'sub'), { 'inner.txt': 'inner, a later commit' }, false);

    // The superproject: a valid `.svc/` tree (its content hash is checked), an LFS file, the submodule.
    const tree = await makeTree(join(root, 'super'));
    const superDir = tree.dir;
    await git(superDir, ['init', '-q', '-b', 'main']);
    await git(superDir, ['lfs', 'install', '--local']);
    await git(superDir, ['lfs', 'track', 'big.bin']);
    await writeFile(join(superDir, 'big.bin'), LFS_CONTENT);
    // `tree` is at <root>/super/tree: `../../sub` from its URL is <root>/sub.
    await recordSubmodule(superDir, { name: 'libs/sub', path: 'libs/sub', url: '../../sub' }, subSha);
    const sha = await repo(superDir, {}, false);
    t.match(await git(superDir, ['cat-file', '-p', `${sha}:big.bin`]), /^version https:\/\/git-lfs/, 'the commit holds an LFS pointer');

    const node = await starting;
    const workDir = join(tmp.dir, 'work');
    const agent = await launchAgent({ url: node.url, workDir, labels: 'gpu' });
    const stores = async () => (await readdir(join(workDir, 'git'))).map((name) => name.split('-')[0]!).sort();
    t.teardown(() => agent.stop());

    const FILES = 'libs/sub,libs/sub/inner.txt,libs/sub/nested/deep.txt,big.bin';
    async function runJob(commit: string, checkout: Record<string, unknown>, target = { cloneUrl: `file://${superDir}`, contentHash: tree.contentHash, files: FILES }) {
      const { jobs } = await insertRun(db.pool, {
        sha: commit,
        cloneUrl: target.cloneUrl,
        contentHash: target.contentHash,
        jobs: [{ name: 'build', runsOn: ['gpu'], matrix: { SCRIPT: 'checkout-view', FILES: target.files }, lock: { checkout: { enabled: true, depth: 1, submodules: false, lfs: false, ...checkout } } }],
      });
      return until('job finished', async () => {
        const row = await jobRow(db.pool, jobs['build']!.id);
        return ['completed', 'failed', 'cancelled'].includes(row.status) ? row : undefined;
      }, 60_000);
    }
    type View = { files: Record<string, string>; status: string; submodules: string };

    await t.test('submodules and lfs on: the recorded commits, recursively, and the real LFS content', async (t) => {
      const row = await runJob(sha, { submodules: true, lfs: true });
      t.equal(row.status, 'completed', row.reason ?? '');
      const view = row.outputs as View;
      t.equal(view.files['libs/sub/inner.txt'], 'inner at the recorded commit', 'the submodule at the commit the superproject records');
      t.equal(view.files['libs/sub/nested/deep.txt'], 'deep', 'its own submodule too (recursive, relative URL against its URL)');
      t.equal(view.files['big.bin'], LFS_CONTENT.trim(), 'the LFS file has its real content');
      t.equal(view.status, '', 'git in the job sees a clean tree (the lfs filter is configured)');
      t.match(view.submodules, new RegExp(`^ ?${subSha} libs/sub \\(`), 'git submodule status: initialised, at the recorded commit');
      t.match(view.submodules, new RegExp(` ${nestedSha} libs/sub/nested`));
    });

    await t.test('the same store, next job off: no submodule files, an LFS pointer', async (t) => {
      const row = await runJob(sha, {});
      t.equal(row.status, 'completed', row.reason ?? '');
      const view = row.outputs as View;
      t.equal(view.files['libs/sub'], 'DIR(0)', 'the submodule is an empty directory');
      t.equal(view.files['libs/sub/inner.txt'], 'ABSENT');
      t.match(view.files['big.bin'], /^version https:\/\/git-lfs\.github\.com\/spec\/v1\noid sha256:[0-9a-f]{64}\nsize \d+$/, 'a pointer: nothing was downloaded or smudged');
      t.equal(view.status, '');
      const superUrl = `file://${superDir}`;
      const keyed = [storeKey(superUrl), storeKey(`${superUrl}\nfile://${join(root, 'sub')}`), storeKey(`${superUrl}\nfile://${join(root, 'nested')}`)];
      t.same(await stores(), keyed.sort(), 'three stores: the superproject, and each submodule keyed under the job\'s repository');
    });

    await t.test('another repository recording the same submodule gets stores of its own', async (t) => {
      const other = await makeTree(join(tmp.dir, 'other'));
      await git(other.dir, ['init', '-q', '-b', 'main']);
      await recordSubmodule(other.dir, { name: 'sub', path: 'sub', url: `file://${join(root, 'sub')}` }, subSha);
      const otherSha = await repo(other.dir, {}, false);
      const before = await stores();
      const row = await runJob(otherSha, { submodules: true }, { cloneUrl: `file://${other.dir}`, contentHash: other.contentHash, files: 'sub/inner.txt' });
      t.equal(row.status, 'completed', row.reason ?? '');
      t.equal((row.outputs as View).files['sub/inner.txt'], 'inner at the recorded commit');
      const added = (await stores()).filter((k) => !before.includes(k));
      t.equal(added.length, 3, 'its own superproject, submodule and nested stores: none shared with the first repository');
      t.ok(added.includes(storeKey(`file://${other.dir}\nfile://${join(root, 'sub')}`)));
    });

    await t.test('depth 0 (the per-job fetch): the same content', async (t) => {
      const row = await runJob(sha, { depth: 0, submodules: true, lfs: true });
      t.equal(row.status, 'completed', row.reason ?? '');
      const view = row.outputs as View;
      t.equal(view.files['libs/sub/inner.txt'], 'inner at the recorded commit');
      t.equal(view.files['libs/sub/nested/deep.txt'], 'deep');
      t.equal(view.files['big.bin'], LFS_CONTENT.trim());
    });

    await t.test('hostile .gitmodules entries are refused with the recorded reason', async (t) => {
      const marker = join(tmp.dir, 'pwned');
      const cases = [
        { label: 'ext:: transport', entry: { name: 'evil', path: 'evil', url: `ext::sh -c touch% ${marker}` }, why: /SVC_ERR_AGENT_SUBMODULE_REFUSED: submodule "evil" .* names a git transport helper \(ext::\)/ },
        { label: '--upload-pack argument', entry: { name: 'evil', path: 'evil', url: `--upload-pack=touch ${marker}` }, why: /SVC_ERR_AGENT_SUBMODULE_REFUSED: .* looks like a command-line option/ },
        { label: 'a path out of the workspace', entry: { name: 'evil', path: '../../escape', url: '../../sub' }, why: /SVC_ERR_AGENT_SUBMODULE_REFUSED: .* leaves the workspace/ },
      ];
      // Three runs at once (the agent runs jobs side by side): each refused on its own.
      await Promise.all(cases.map(async (c, i) => {
        const bad = await makeTree(join(tmp.dir, `hostile-${i}`));
        await git(bad.dir, ['init', '-q', '-b', 'main']);
        await recordSubmodule(bad.dir, c.entry, subSha);
        // The escaping entry has no gitlink at its path; one at a safe path makes git look for it.
        if (c.entry.path.startsWith('..')) {
          await git(bad.dir, ['update-index', '--add', '--cacheinfo', `160000,${subSha},safe`]);
          await mkdir(join(bad.dir, 'safe'));
        }
        const badSha = await repo(bad.dir, {}, false);
        const row = await runJob(badSha, { submodules: true }, { cloneUrl: `file://${bad.dir}`, contentHash: bad.contentHash, files: FILES });
        t.equal(row.status, 'failed', c.label);
        t.match(row.reason ?? '', c.why, `${c.label}: ${row.reason ?? ''}`);
      }));
      t.notOk(existsSync(marker), 'no command ran');
      t.notOk(existsSync(join(tmp.dir, 'escape')), 'nothing written outside');
    });
  });
});
