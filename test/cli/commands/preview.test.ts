// `svc preview`: events built from a real git checkout, matched by workflow/matching. In-process
// calls for the matrix of events, the CLI (in-process, runSvc → runCli) for exit codes and output.
import path from 'node:path';
import t from 'tap';
import { parseEventSpec } from '../../../cli/preview/local-event.ts';
import { readLocalGitState, repositoryFromRemote } from '../../../cli/preview/local-git-state.ts';
import { previewEvent, type PreviewResult } from '../../../cli/preview/preview.ts';
import { commitAll, git, runSvc, SEVERAL_WORKFLOWS, tempRepo, workflowFile, writeFiles } from '../../fixtures/workflow-trees/index.ts';


const ALL = ['ci', 'deploy', 'docs', 'nightly', 'review-gate'];

/** main with the workflows, then a feature branch touching docs/ and src/. */
function repository(t: Parameters<typeof tempRepo>[0]): string {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS, { git: true });
  commitAll(dir, 'workflows');
  git(dir, ['checkout', '-q', '-b', 'feature/login']);
  writeFiles(dir, { 'docs/guide.md': '# guide\n', 'src/app.ts': 'export const app = 2;\n' });
  commitAll(dir, 'docs: login guide [skip ci]');
  git(dir, ['remote', 'add', 'origin', 'git@github.com:acme/shop.git']);
  return dir;
}

function names(result: PreviewResult): { matched: string[]; unmatched: string[] } {
  return { matched: result.matched.map((m) => m.workflow), unmatched: result.unmatched.map((u) => u.workflow) };
}

t.test('every workflow is either matched (with jobs) or unmatched (with a reason)', async (t) => {
  const dir = repository(t);
  const push = await previewEvent({ cwd: dir, event: 'push' });
  t.equal(push.event.repository, 'acme/shop');
  t.equal(push.event.branch, 'feature/login');
  t.equal(push.changedFiles.base, 'merge base with main');
  t.same(push.changedFiles.files, ['docs/guide.md', 'src/app.ts']);
  t.equal(push.event.commitMessage, 'docs: login guide [skip ci]');
  t.same(names(push), { matched: ['ci', 'docs'], unmatched: ['deploy', 'nightly', 'review-gate'] });
  t.same(push.matched.find((m) => m.workflow === 'ci')?.jobs, ['lint', 'test']);
  t.match(push.unmatched.find((u) => u.workflow === 'deploy'), { verdict: 'no_match', reason: /branches fail: branch "feature\/login" matches none of \["release\/\*"\]/ });
  t.match(push.unmatched.find((u) => u.workflow === 'nightly')?.reason, /no push trigger \(triggers: dispatch\)/);
  for (const u of push.unmatched) t.ok(u.reason.length > 0, `${u.workflow} has a reason`);
  t.equal(push.matched.length + push.unmatched.length, ALL.length);

  const onMain = await previewEvent({ cwd: dir, event: 'push', branch: 'release/1.0' });
  t.same(names(onMain).matched, ['deploy', 'docs']);

  const pr = await previewEvent({ cwd: dir, event: 'pr' });
  t.same(names(pr).matched, ['ci']);
  t.equal(pr.event.baseBranch, 'main');
  const closed = await previewEvent({ cwd: dir, event: 'pull_request:closed' });
  t.match(closed.unmatched.find((u) => u.workflow === 'ci')?.reason, /actions fail: pull request action "closed"/);

  const tag = await previewEvent({ cwd: dir, event: 'tag:v2.0.0' });
  t.same(names(tag).matched, ['deploy']);
  const dispatched = await previewEvent({ cwd: dir, event: 'dispatch' });
  t.same(names(dispatched).matched, ['nightly']);
  t.match(dispatched.matched[0]!.trigger, /dispatch/);
});

t.test('undecidable filters are reported as indeterminate', async (t) => {
  const dir = repository(t);
  const review = await previewEvent({ cwd: dir, event: 'review' });
  t.match(review.unmatched.find((u) => u.workflow === 'review-gate'), { verdict: 'indeterminate', reason: /states indeterminate: the review state was not supplied/ });
  const approved = await previewEvent({ cwd: dir, event: 'review:approved' });
  t.same(names(approved).matched, ['review-gate']);
});

t.test('content requirements are read from the working tree', async (t) => {
  const dir = repository(t);
  writeFiles(dir, {
    '.svc/workflows/gated.ts': workflowFile('gated', "push({ requires: [{ file: 'package.json', contains: 'workspaces' }] })"),
  });
  const missing = await previewEvent({ cwd: dir, event: 'push' });
  t.match(missing.unmatched.find((u) => u.workflow === 'gated')?.reason, /requires/);
  writeFiles(dir, { 'package.json': '{ "workspaces": [] }\n' });
  const present = await previewEvent({ cwd: dir, event: 'push' });
  t.ok(present.matched.some((m) => m.workflow === 'gated'));
});

t.test('the command prints matches, jobs and reasons; --debug adds every verdict; --json', async (t) => {
  const dir = repository(t);
  const text = await runSvc(dir, ['preview', 'push']);
  t.equal(text.code, 0, text.stderr);
  t.match(text.stdout, /^event: push on branch feature\/login \([0-9a-f]{7}\) in acme\/shop$/m);
  t.match(text.stdout, /^changed files \(vs merge base with main\): docs\/guide\.md, src\/app\.ts$/m);
  t.match(text.stdout, /^match {4}ci {2}via push\(branches: main,feature\/\*\)$/m);
  t.match(text.stdout, /^ {9}jobs: lint, test$/m);
  t.match(text.stdout, /^no match deploy: /m);
  t.match(text.stdout, /^no match review-gate: no push trigger/m);
  t.notMatch(text.stdout, /pass {10}/, 'no verdict table without --debug');

  const debug = await runSvc(dir, ['preview', 'pr', '--debug']);
  t.equal(debug.code, 0);
  t.match(debug.stdout, /pr#1 +actions +pass +pull request action "opened"/);
  t.match(debug.stdout, /push#0 +type +fail +event type "pr" is not "push"/);

  const json = await runSvc(dir, ['preview', 'review', '--json']);
  t.equal(json.code, 0);
  const out = JSON.parse(json.stdout) as PreviewResult;
  t.same(out.unmatched.map((u) => u.verdict).sort(), ['indeterminate', 'no_match', 'no_match', 'no_match', 'no_match']);

  const bad = await runSvc(dir, ['preview', 'deploy-please']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /SVC_ERR_CLI_USAGE: unknown event "deploy-please"; events: push, pr/);
  t.equal((await runSvc(dir, ['preview', 'event'])).code, 2, 'event needs a name');
  t.equal((await runSvc(dir, ['preview'])).code, 2, 'the event is required');
});

t.test('preview compiles in memory: the lock file is not written', async (t) => {
  const dir = repository(t);
  const result = await runSvc(dir, ['preview', 'push']);
  t.equal(result.code, 0);
  t.equal(git(dir, ['status', '--porcelain', '--untracked-files=all', '.svc']), '', 'no lock written');
  const broken = tempRepo(t, { '.svc/workflows/x.ts': 'export default 1;\n' }, { git: true });
  commitAll(broken, 'x');
  const failed = await runSvc(broken, ['preview', 'push']);
  t.equal(failed.code, 1);
  t.match(failed.stderr, /SVC_ERR_COMPILE_NOT_A_WORKFLOW: \.svc\/workflows\/x\.ts/);
  const noGit = tempRepo(t, SEVERAL_WORKFLOWS);
  const outside = await runSvc(noGit, ['preview', 'push']);
  t.equal(outside.code, 1);
  t.match(outside.stderr, /SVC_ERR_PREVIEW_NOT_A_REPOSITORY/);
});

t.test('git state: first commit, detached HEAD, repository names', async (t) => {
  const dir = tempRepo(t, SEVERAL_WORKFLOWS, { git: true });
  const empty = await readLocalGitState(dir);
  t.match(empty, { sha: null, branch: 'main', changedFilesBase: 'empty tree (no commits yet)', repository: `local/${path.basename(dir)}` });
  commitAll(dir, 'first');
  const first = await readLocalGitState(dir);
  t.equal(first?.changedFilesBase, 'empty tree (first commit)');
  t.ok(first?.changedFiles?.includes('.svc/workflows/ci.ts'));
  writeFiles(dir, { 'src/app.ts': 'changed\n' });
  commitAll(dir, 'second');
  const second = await readLocalGitState(dir);
  t.equal(second?.changedFilesBase, 'HEAD~1');
  t.same(second?.changedFiles, ['src/app.ts']);
  git(dir, ['checkout', '-q', '--detach']);
  const detached = await previewEvent({ cwd: dir, event: 'push' });
  t.equal(detached.event.branch, null);
  t.match(detached.unmatched.find((u) => u.workflow === 'ci')?.reason, /not on a branch/);

  t.equal(repositoryFromRemote('git@github.com:acme/shop.git'), 'acme/shop');
  t.equal(repositoryFromRemote('https://github.com/acme/shop'), 'acme/shop');
  t.equal(repositoryFromRemote('ssh://git@host:2222/team/acme/shop.git/'), 'acme/shop');
  t.equal(repositoryFromRemote('/srv/git/shop.git'), 'git/shop');
  t.equal(repositoryFromRemote('shop'), undefined);
});

t.test('event argument grammar', async (t) => {
  t.same(parseEventSpec('pull_request:synchronize'), { kind: 'pr', qualifier: 'synchronize' });
  t.same(parseEventSpec('tag:v1'), { kind: 'tag', qualifier: 'v1' });
  t.same(parseEventSpec('event:deployed'), { kind: 'event', qualifier: 'deployed' });
  for (const bad of ['', 'nope', 'push:main', 'pr:', 'event', 'webhook', 'tag:a b']) {
    t.throws(() => parseEventSpec(bad), { code: 'SVC_ERR_CLI_USAGE' }, JSON.stringify(bad));
  }
});

t.test('a lock compiled from the same .svc/ tree is used as it is; any change under .svc/ compiles again', async (t) => {
  const { compileWorkflows } = await import('../../../cli/compiler/compile.ts');
  const { readFreshLock } = await import('../../../cli/preview/fresh-lock.ts');
  const dir = repository(t);
  t.equal(await readFreshLock(dir), undefined, 'no lock yet');
  const inMemory = await previewEvent({ cwd: dir, event: 'push' });
  const compiled = await compileWorkflows({ repoRoot: dir, mode: 'write' });
  const fresh = await readFreshLock(dir);
  t.ok(fresh, 'the lock just written is fresh');
  t.equal(fresh?.lock.contentHash, compiled.lock.contentHash);
  const fromLock = await previewEvent({ cwd: dir, event: 'push' });
  t.same(names(fromLock), names(inMemory), 'the committed lock and a compile in memory agree');
  t.same(fromLock.matched.map((m) => m.jobs), inMemory.matched.map((m) => m.jobs));

  // An uncompiled edit to a workflow: the lock is stale, and preview shows the edit.
  writeFiles(dir, { '.svc/workflows/docs.ts': workflowFile('docs', "push({ branches: ['nowhere'] })") });
  t.equal(await readFreshLock(dir), undefined, 'an edited workflow makes the lock stale');
  t.ok((await previewEvent({ cwd: dir, event: 'push' })).unmatched.some((u) => u.workflow === 'docs'), 'the edit shows');
  await compileWorkflows({ repoRoot: dir, mode: 'write' });
  t.ok(await readFreshLock(dir), 'fresh again after compiling');

  // A new file anywhere under .svc/ (a helper a workflow may import) changes the tree digest.
  writeFiles(dir, { '.svc/lib/helper.ts': 'export const x = 1;\n' });
  t.equal(await readFreshLock(dir), undefined, 'a new helper file makes the lock stale');
  await compileWorkflows({ repoRoot: dir, mode: 'write' });

  // A lock edited by hand, or written by another compile schema, is never trusted.
  const { readFileSync, writeFileSync } = await import('node:fs');
  const lockPath = path.join(dir, '.svc', 'svc.lock.json');
  const text = readFileSync(lockPath, 'utf8');
  writeFileSync(lockPath, text.replace('"main"', '"mainline"'));
  t.equal(await readFreshLock(dir), undefined, 'a hand-edited lock is not used');
  const { computeLockContentHash } = await import('../../../workflow/lock/lock-file.ts');
  const older = JSON.parse(text) as { contentHash: string; workflows: { compileSchemaVersion: number }[] };
  for (const w of older.workflows) w.compileSchemaVersion -= 1;
  older.contentHash = computeLockContentHash(older as never);
  writeFileSync(lockPath, JSON.stringify(older));
  t.equal(await readFreshLock(dir), undefined, 'a lock of an older compile schema is not used');
});
