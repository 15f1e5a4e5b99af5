// The repository files a local job gets, from real git repositories in temp directories: HEAD's
// tree as committed, HEAD plus the working tree's changes (--uncommitted), and the working tree
// outside git or before the first commit (.gitignore and .svcignore respected, never .git/).
import { chmodSync, lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { listWorkingTree, stageRepoFiles } from '../../../../cli/local-run/host/repo-files.ts';
import { commitAll, git, tempRepo, writeFiles } from '../../../fixtures/workflow-trees/index.ts';

function scratch(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-repo-files-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'out');
}

const exists = (file: string) => lstatSync(file, { throwIfNoEntry: false }) !== undefined;
const text = (file: string) => readFileSync(file, 'utf8');

/** A committed tree, then edits left uncommitted. */
function repoWithChanges(t: Parameters<typeof tempRepo>[0]): { dir: string; sha: string } {
  const dir = tempRepo(t, {
    'data.txt': 'A\n',
    'gone.txt': 'deleted later\n',
    'bin/run.sh': '#!/bin/sh\necho run\n',
    'lib/a.txt': 'a\n',
    '.gitignore': 'build/\n',
    '.svc/workflows/ci.ts': '// workflow\n',
  }, { git: true });
  chmodSync(path.join(dir, 'bin/run.sh'), 0o755);
  symlinkSync('lib/a.txt', path.join(dir, 'link.txt'));
  symlinkSync('/etc/hostname', path.join(dir, 'outside.txt'));
  const sha = commitAll(dir, 'first');
  writeFiles(dir, { 'data.txt': 'B\n', 'new.txt': 'untracked\n', 'build/out.txt': 'ignored\n', '.svc/workflows/ci.ts': '// edited\n' });
  unlinkSync(path.join(dir, 'gone.txt'));
  return { dir, sha };
}

t.test('committed: the tree of HEAD, as a checkout writes it, without .svc/', async (t) => {
  const { dir, sha } = repoWithChanges(t);
  const into = scratch(t);
  const staged = await stageRepoFiles({ root: dir, git: { top: dir, sha }, uncommitted: false, into });
  t.equal(staged.origin, 'head');
  t.equal(text(path.join(into, 'data.txt')), 'A\n', 'the committed content, not the edit');
  t.ok(exists(path.join(into, 'gone.txt')), 'a file deleted in the working tree is still in HEAD');
  t.notOk(exists(path.join(into, 'new.txt')), 'untracked files are not committed');
  t.notOk(exists(path.join(into, 'build')), 'ignored files neither');
  t.notOk(exists(path.join(into, '.svc')), 'the bundle supplies .svc/');
  t.notOk(exists(path.join(into, '.git')));
  t.equal(lstatSync(path.join(into, 'bin/run.sh')).mode & 0o111, 0o111, 'the executable bit is kept');
  t.equal(readlinkSync(path.join(into, 'link.txt')), 'lib/a.txt', 'a symlink stays a symlink');
  t.notOk(exists(path.join(into, 'outside.txt')), 'a link to an absolute path is left out');
  t.same(staged.skippedLinks, ['outside.txt']);
  t.equal(staged.files, 6, '.gitignore, bin/run.sh, data.txt, gone.txt, lib/a.txt, link.txt');
  t.equal(git(dir, ['status', '--porcelain']).split('\n').length, 4, 'the index and work tree are untouched (3 changes + 1 untracked)');
});

t.test('uncommitted: modified and untracked files on top, deleted ones absent', async (t) => {
  const { dir, sha } = repoWithChanges(t);
  const into = scratch(t);
  const staged = await stageRepoFiles({ root: dir, git: { top: dir, sha }, uncommitted: true, into });
  t.equal(staged.origin, 'head+uncommitted');
  t.equal(text(path.join(into, 'data.txt')), 'B\n');
  t.equal(text(path.join(into, 'new.txt')), 'untracked\n');
  t.notOk(exists(path.join(into, 'gone.txt')), 'deleted');
  t.notOk(exists(path.join(into, 'build')), 'ignored');
  t.notOk(exists(path.join(into, '.svc')));
  t.notOk(exists(path.join(into, '.git')));
  t.equal(lstatSync(path.join(into, 'bin/run.sh')).mode & 0o111, 0o111);
  t.equal(readlinkSync(path.join(into, 'link.txt')), 'lib/a.txt');
});

t.test('a project in a subdirectory of the work tree gets that subtree', async (t) => {
  const top = tempRepo(t, { 'other/x.txt': 'x\n', 'app/data.txt': 'A\n', 'app/.svc/workflows/ci.ts': '//\n' }, { git: true });
  const sha = commitAll(top, 'first');
  const root = path.join(top, 'app');
  const committed = scratch(t);
  await stageRepoFiles({ root, git: { top, sha }, uncommitted: false, into: committed });
  t.equal(text(path.join(committed, 'data.txt')), 'A\n');
  t.notOk(exists(path.join(committed, 'other')));
  writeFiles(root, { 'more.txt': 'm\n' });
  const withChanges = scratch(t);
  await stageRepoFiles({ root, git: { top, sha }, uncommitted: true, into: withChanges });
  t.ok(exists(path.join(withChanges, 'more.txt')));
  t.notOk(exists(path.join(withChanges, 'other')));
});

t.test('outside git, and before the first commit: the working tree less what is ignored', async (t) => {
  const plain = tempRepo(t, {
    'src/a.ts': 'a\n',
    'src/gen/out.js': 'generated\n',
    'src/.gitignore': 'gen/\n',
    'dist/b.js': 'built\n',
    'secret.env': 'X=1\n',
    '.gitignore': 'dist/\n',
    '.svcignore': 'secret.env\n',
    '.git/HEAD': 'a stray file that only looks like git\n',
    '.svc/workflows/ci.ts': '//\n',
  });
  t.same(await listWorkingTree(plain), ['.gitignore', '.svc/workflows/ci.ts', '.svcignore', 'src/.gitignore', 'src/a.ts']);
  const into = scratch(t);
  const staged = await stageRepoFiles({ root: plain, git: null, uncommitted: false, into });
  t.equal(staged.origin, 'working-tree');
  t.equal(staged.files, 4);
  t.ok(exists(path.join(into, 'src/a.ts')));
  t.notOk(exists(path.join(into, '.svc')));

  const fresh = tempRepo(t, { 'data.txt': 'A\n', 'tmp/x': 'x\n' }, { git: true });
  writeFiles(fresh, { '.git/info/exclude': 'tmp/\n' });
  const noCommit = scratch(t);
  const first = await stageRepoFiles({ root: fresh, git: { top: fresh, sha: null }, uncommitted: true, into: noCommit });
  t.equal(first.origin, 'working-tree');
  t.equal(text(path.join(noCommit, 'data.txt')), 'A\n');
  t.notOk(exists(path.join(noCommit, 'tmp')), '.git/info/exclude is respected');
  t.notOk(exists(path.join(noCommit, '.git')));
});
