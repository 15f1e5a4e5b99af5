// `svc hook install`: a real git repository, a real `git commit` running the hook.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { commitAll, git, runSvc, tempRepo, workflowFile, writeFiles } from '../../fixtures/workflow-trees/index.ts';


t.test('the hook recompiles and stages the lock on git commit; reinstalling is a no-op', async (t) => {
  const dir = tempRepo(t, {}, { git: true });
  t.equal((await runSvc(dir, ['init'])).code, 0);
  commitAll(dir, 'init');
  const installed = await runSvc(dir, ['hook', 'install', '--json']);
  t.equal(installed.code, 0, installed.stderr);
  const out = JSON.parse(installed.stdout) as { path: string; action: string };
  t.equal(out.action, 'installed');
  t.equal(out.path, path.join(dir, '.git', 'hooks', 'pre-commit'));
  t.equal(statSync(out.path).mode & 0o111, 0o111, 'executable');
  const again = await runSvc(dir, ['hook', 'install']);
  t.equal(again.code, 0);
  t.match(again.stdout, /pre-commit hook unchanged/);

  // Edit a workflow and commit only the workflow: the hook adds the recompiled lock.
  const before = readFileSync(path.join(dir, '.svc/svc.lock.json'), 'utf8');
  writeFiles(dir, { '.svc/workflows/extra.ts': workflowFile('extra', "push({ branches: ['x'] })") });
  git(dir, ['add', '.svc/workflows/extra.ts']);
  git(dir, ['commit', '-q', '-m', 'add extra']);
  const committed = git(dir, ['show', '--name-only', '--format=', 'HEAD']).split('\n').sort();
  t.same(committed, ['.svc/svc.lock.json', '.svc/workflows/extra.ts']);
  const after = git(dir, ['show', 'HEAD:.svc/svc.lock.json']);
  t.not(after, before.trim());
  t.match(after, /"name": "extra"/);
  t.equal(git(dir, ['status', '--porcelain']), '', 'nothing left unstaged');
  t.equal((await runSvc(dir, ['compile', '--check'])).code, 0);
});

t.test('a broken workflow makes the hook fail the commit', async (t) => {
  const dir = tempRepo(t, {}, { git: true });
  t.equal((await runSvc(dir, ['init'])).code, 0);
  commitAll(dir, 'init');
  t.equal((await runSvc(dir, ['hook', 'install'])).code, 0);
  writeFiles(dir, { '.svc/workflows/bad.ts': "export default 42;\n" });
  git(dir, ['add', '-A']);
  t.throws(() => git(dir, ['commit', '-q', '-m', 'bad']), /not a workflow/);
  t.equal(git(dir, ['rev-list', '--count', 'HEAD']), '1', 'no commit made');
});

t.test('a foreign hook is kept unless --force (then backed up); core.hooksPath is honoured', async (t) => {
  const dir = tempRepo(t, { '.svc/workflows/a.ts': workflowFile('a', 'push()') }, { git: true });
  const hooks = path.join(dir, '.git', 'hooks');
  writeFiles(dir, { '.git/hooks/pre-commit': '#!/bin/sh\necho mine\n' });
  const refused = await runSvc(dir, ['hook', 'install']);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /SVC_ERR_HOOK_FOREIGN: .*pre-commit already exists and was not written by svc.*--force/);
  t.equal(readFileSync(path.join(hooks, 'pre-commit'), 'utf8'), '#!/bin/sh\necho mine\n');
  const forced = await runSvc(dir, ['hook', 'install', '--force']);
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stdout, /pre-commit hook replaced/);
  t.equal(readFileSync(path.join(hooks, 'pre-commit.svc-backup'), 'utf8'), '#!/bin/sh\necho mine\n');
  t.match(readFileSync(path.join(hooks, 'pre-commit'), 'utf8'), /svc-managed/);

  // Our own (older) hook is updated without --force.
  writeFileSync(path.join(hooks, 'pre-commit'), '#!/bin/sh\n# svc-managed: pre-commit old\n');
  const updated = await runSvc(dir, ['hook', 'install']);
  t.match(updated.stdout, /pre-commit hook updated/);

  git(dir, ['config', 'core.hooksPath', '.githooks']);
  const custom = await runSvc(dir, ['hook', 'install', '--json']);
  t.equal(custom.code, 0, custom.stderr);
  t.equal((JSON.parse(custom.stdout) as { path: string }).path, path.join(dir, '.githooks', 'pre-commit'));
  git(dir, ['add', '-A']);
  git(dir, ['commit', '-q', '-m', 'with hooksPath']);
  t.match(git(dir, ['show', '--name-only', '--format=', 'HEAD']), /\.svc\/svc\.lock\.json/, 'the hook under core.hooksPath ran');
});

t.test('outside a git repository or without .svc/ it says what to do', async (t) => {
  const plain = tempRepo(t, { '.svc/workflows/a.ts': workflowFile('a', 'push()') });
  const noGit = await runSvc(plain, ['hook', 'install']);
  t.equal(noGit.code, 1);
  t.match(noGit.stderr, /SVC_ERR_HOOK_NOT_A_REPOSITORY: not inside a git work tree/);
  const noSvc = tempRepo(t, {}, { git: true });
  const result = await runSvc(noSvc, ['hook', 'install']);
  t.equal(result.code, 1);
  t.match(result.stderr, /run `svc init` first/);
});
