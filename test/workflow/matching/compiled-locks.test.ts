// The compiler and the matcher read filter lists the same way: SDK definitions compiled to lock
// entries match the events a developer expects.
import t from 'tap';
import { workflowToLockEntry } from '../../../workflow/compile/lock-entry.ts';
import { buildLock } from '../../../workflow/lock/lock-file.ts';
import { matchLock } from '../../../workflow/matching/index.ts';
import { normalizeGithubPayload } from '../../../plugins/providers/shared/github-payload.ts';
import { job, pr, push, step, workflow } from '../../../sdk/index.ts';
import { pullRequestPayload, pushPayload } from '../../fixtures/github-payloads.ts';

const HASH = 'c'.repeat(64);
const build = job({ runsOn: ['linux'], steps: [step('test', async () => {})] });

function lockOf(...defs: Parameters<typeof workflowToLockEntry>[0][]) {
  return buildLock({
    source: '.svc/workflows/*.ts#default',
    workflows: defs.map((d, i) => workflowToLockEntry(d, { sourcePath: `.svc/workflows/w${i}.ts`, exportName: 'default', contentHash: HASH })),
  });
}

t.test('a negation-only branch list means every branch except those', async (t) => {
  const lock = lockOf(workflow('not-main', { on: push({ branches: ['!main'] }), jobs: { build } }));
  const onFeature = matchLock(normalizeGithubPayload('github', 'push', pushPayload({ ref: 'refs/heads/feature/x' })), lock);
  t.same(onFeature.matched.map((m) => m.workflow), ['not-main']);
  const onMain = matchLock(normalizeGithubPayload('github', 'push', pushPayload({ ref: 'refs/heads/main' })), lock);
  t.same(onMain.matched, []);
  t.match(onMain.unmatched[0], { workflow: 'not-main', verdict: 'no_match' });
});

t.test('pull-request actions and base-branch filters survive compilation', async (t) => {
  const lock = lockOf(
    workflow('pr-opened', { on: pr({ actions: ['opened'], branches: ['main'] }), jobs: { build } }),
    workflow('pushes', { on: push({ branches: ['main'] }), jobs: { build } }),
  );
  const opened = matchLock(normalizeGithubPayload('github', 'pull_request', pullRequestPayload({ action: 'opened' })), lock);
  t.same(opened.matched.map((m) => m.workflow), ['pr-opened']);
  t.same(opened.matched[0]?.jobs, ['build']);
  const closed = matchLock(normalizeGithubPayload('github', 'pull_request', pullRequestPayload({ action: 'closed' })), lock);
  t.same(closed.matched, []);
  t.equal(closed.unmatched.length, 2, 'a reason for every non-match');
});

t.test('commitMessage on a branch deletion is indeterminate and does not run', async (t) => {
  const lock = lockOf(workflow('release-notes', { on: push({ commitMessage: '*release*' }), jobs: { build } }));
  const deletion = normalizeGithubPayload('github', 'push', pushPayload({ after: '0'.repeat(40) }));
  const result = matchLock(deletion, lock);
  t.same(result.matched, []);
  t.match(result.unmatched, [{ workflow: 'release-notes', verdict: 'indeterminate' }]);
});
