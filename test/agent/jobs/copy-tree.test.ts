// copyTree (agent/jobs/cached-restore.ts): a cached tree copied into a job's workspace keeps
// file modes, directory modes and symlinks as they are, and never writes through what is in the
// way (a symlink a checkout left where the cache has a file or a directory).
import { chmod, lstat, mkdir, readFile, readlink, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { copyTree } from '../../../agent/jobs/cached-restore.ts';
import { tempDir } from '../fixtures/trees.ts';

const tmp = await tempDir('svc-copy-tree-');
t.teardown(tmp.cleanup);

async function listing(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(join(dir, rel))).sort()) {
    const path = rel === '' ? name : `${rel}/${name}`;
    const s = await lstat(join(dir, path));
    const mode = (s.mode & 0o7777).toString(8);
    if (s.isSymbolicLink()) out.push(`${path} -> ${await readlink(join(dir, path))}`);
    else if (s.isDirectory()) out.push(`${path}/ ${mode}`, ...(await listing(dir, path)));
    else out.push(`${path} ${mode} ${await readFile(join(dir, path), 'utf8')}`);
  }
  return out;
}

// Both ways: a tree of unknown size (thread-pool calls) and one known to be small (synchronous calls).
for (const [way, entries] of [['async', undefined], ['sync', 20]] as const) {
  t.test(`${way}: modes, symlinks and nested directories come out as in the cache`, async (t) => {
    const from = join(tmp.dir, `cache-a-${way}`);
    await mkdir(join(from, '.svc', 'workflows', 'deep'), { recursive: true });
    await writeFile(join(from, '.svc', 'workflows', 'ci.ts'), 'export {}');
    await writeFile(join(from, '.svc', 'run.sh'), '#!/bin/sh\n');
    await chmod(join(from, '.svc', 'run.sh'), 0o755);
    await writeFile(join(from, '.svc', 'workflows', 'deep', 'private.txt'), 'p');
    await chmod(join(from, '.svc', 'workflows', 'deep', 'private.txt'), 0o600);
    await mkdir(join(from, 'locked'));
    await chmod(join(from, 'locked'), 0o700);
    await symlink('workflows/ci.ts', join(from, '.svc', 'link.ts'));
    await symlink('../../../outside', join(from, '.svc', 'dangling'));
    const to = join(tmp.dir, `job-a-${way}`);
    await mkdir(to);
    await copyTree(from, to, entries);
    t.same(await listing(to), await listing(from), 'the same tree, modes and link targets');
    t.ok((await lstat(join(to, '.svc', 'link.ts'))).isSymbolicLink(), 'a link stays a link (not its target copied)');
  });

  t.test(`${way}: what is in the way is replaced, never written through`, async (t) => {
    const from = join(tmp.dir, `cache-b-${way}`);
    await mkdir(join(from, '.svc', 'sub'), { recursive: true });
    await writeFile(join(from, '.svc', 'file.txt'), 'from the cache');
    await writeFile(join(from, '.svc', 'sub', 'x.txt'), 'x');
    const outside = join(tmp.dir, `outside-${way}`);
    await mkdir(outside);
    await writeFile(join(outside, 'victim.txt'), 'untouched');
    const to = join(tmp.dir, `job-b-${way}`);
    await mkdir(join(to, '.svc'), { recursive: true });
    // A checkout's hostile links where the cache has a file and a directory.
    await symlink(join(outside, 'victim.txt'), join(to, '.svc', 'file.txt'));
    await symlink(outside, join(to, '.svc', 'sub'));
    await writeFile(join(to, '.svc', 'kept.txt'), 'the workspace keeps what the cache lacks');
    await copyTree(from, to, entries);
    t.equal(await readFile(join(outside, 'victim.txt'), 'utf8'), 'untouched', 'the link target was not written');
    t.same(await readdir(outside), ['victim.txt'], 'nothing was created through the directory link');
    t.equal(await readFile(join(to, '.svc', 'file.txt'), 'utf8'), 'from the cache');
    t.ok((await lstat(join(to, '.svc', 'sub'))).isDirectory(), 'the directory link was replaced by a directory');
    t.equal(await readFile(join(to, '.svc', 'sub', 'x.txt'), 'utf8'), 'x');
    t.equal(await readFile(join(to, '.svc', 'kept.txt'), 'utf8'), 'the workspace keeps what the cache lacks');
  });
}
