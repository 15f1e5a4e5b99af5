import t from 'tap';
import { matchLock, matchSchedule, scheduleFireName, explainWorkflow } from '../../../workflow/matching/match-lock.ts';
import { githubEventDetails } from '../../../workflow/matching/event-details.ts';
import { issueCommentPayload, pullRequestPayload, pushPayload } from '../../fixtures/github-payloads.ts';
import { job, lockOf, lockWith, trig, workflow } from '../../fixtures/locks.ts';
import {
  forkPayload,
  genericEvent,
  refEventPayload,
  releasePayload,
  repositoryDispatchPayload,
  reviewCommentPayload,
  reviewPayload,
  starPayload,
  statusPayload,
  svcEvent,
  watchPayload,
  workflowDispatchPayload,
  workflowRunPayload,
} from '../../fixtures/more-payloads.ts';
import { filterVerdict, gh, outcome, summary } from './helpers.ts';

t.test('push: branch filters, with the verdict in words', async (t) => {
  const lock = lockWith('ci', trig.push({ branches: ['main', 'release/*'] }));
  const main = outcome(lock, gh('push', pushPayload()));
  t.equal(summary(main), 'match');
  t.equal(filterVerdict(main, 'branches')?.detail, 'branch "main" matches "main"');

  const feature = outcome(lock, gh('push', pushPayload({ ref: 'refs/heads/feature/x' })));
  t.equal(summary(feature), 'no_match');
  t.same(filterVerdict(feature, 'branches'), {
    trigger: 0,
    triggerType: 'push',
    filter: 'branches',
    verdict: 'fail',
    detail: 'branch "feature/x" matches none of ["main", "release/*"]',
  });
  t.equal(summary(outcome(lock, gh('push', pushPayload({ ref: 'refs/heads/release/1.2' })))), 'match');
  // `*` stops at a slash.
  t.equal(summary(outcome(lock, gh('push', pushPayload({ ref: 'refs/heads/release/1.2/hotfix' })))), 'no_match');
  // No branch filter: any branch.
  t.equal(filterVerdict(outcome(lockWith('ci', trig.push()), gh('push', pushPayload())), 'branches')?.detail, 'no branches filter');
});

t.test('push to a ref that is not a branch fails a branch filter', async (t) => {
  const lock = lockWith('ci', trig.push({ branches: ['**'] }));
  const o = outcome(lock, gh('push', pushPayload({ ref: 'refs/notes/commits' })));
  t.equal(summary(o), 'no_match');
  t.match(filterVerdict(o, 'branches')?.detail, /not on a branch/);
});

t.test('a tag push is a tag event: tag triggers match it, push triggers do not', async (t) => {
  const event = gh('push', pushPayload({ ref: 'refs/tags/v1.2.0' }));
  t.equal(event.type, 'tag');
  const push = outcome(lockWith('ci', trig.push()), event);
  t.equal(summary(push), 'no_match');
  t.same(filterVerdict(push, 'type')?.detail, 'event type "tag" is not "push"');
  t.equal(summary(outcome(lockWith('rel', trig.tag({ tags: ['v*'] })), event)), 'match');
  const other = outcome(lockWith('rel', trig.tag({ tags: ['release-*'] })), event);
  t.equal(filterVerdict(other, 'tags')?.detail, 'tag "v1.2.0" matches none of ["release-*"]');
});

t.test('pr: actions (empty = any) and base-branch filters', async (t) => {
  const lock = lockWith('pr', trig.pr({ branches: ['main'] }));
  t.equal(summary(outcome(lock, gh('pull_request', pullRequestPayload({ action: 'opened' })))), 'match');
  const closed = outcome(lock, gh('pull_request', pullRequestPayload({ action: 'closed' })));
  t.equal(summary(closed), 'no_match');
  t.equal(filterVerdict(closed, 'actions')?.detail, 'pull request action "closed" is not one of ["opened", "reopened", "synchronize"]');
  const any = outcome(lockWith('pr', trig.pr({ actions: [] })), gh('pull_request', pullRequestPayload({ action: 'labeled' })));
  t.equal(summary(any), 'match');
  t.equal(filterVerdict(any, 'actions')?.detail, 'no actions filter (pull request action "labeled")');
  // The branch filter reads the base branch, not the head.
  const toDevelop = outcome(lock, gh('pull_request', pullRequestPayload({ headRef: 'main', baseRef: 'develop' })));
  t.equal(summary(toDevelop), 'no_match');
  t.equal(filterVerdict(toDevelop, 'branches')?.detail, 'base branch "develop" matches none of ["main"]');
  t.equal(summary(outcome(lock, gh('pull_request_target', pullRequestPayload()))), 'match');
});

t.test('comment, star, watch and fork', async (t) => {
  const comment = lockWith('c', trig.comment());
  t.equal(summary(outcome(comment, gh('issue_comment', issueCommentPayload('/deploy')))), 'match');
  t.equal(summary(outcome(comment, gh('issue_comment', { ...issueCommentPayload('x'), action: 'deleted' }))), 'no_match');

  const star = lockWith('s', trig.star());
  t.equal(summary(outcome(star, gh('star', starPayload('created')))), 'match');
  const unstar = outcome(star, gh('star', starPayload('deleted')));
  t.equal(filterVerdict(unstar, 'actions')?.detail, 'star action "deleted" is not one of ["created"]');

  t.equal(summary(outcome(lockWith('w', trig.watch()), gh('watch', watchPayload()))), 'match');
  t.equal(summary(outcome(lockWith('w', trig.watch()), gh('star', starPayload()))), 'no_match');

  const fork = outcome(lockWith('f', trig.fork()), gh('fork', forkPayload()));
  t.equal(summary(fork), 'match');
  t.equal(filterVerdict(fork, 'repositories')?.verdict, 'pass');
});

t.test('release: actions and tags', async (t) => {
  const lock = lockWith('rel', trig.release({ tags: ['v*'] }));
  t.equal(summary(outcome(lock, gh('release', releasePayload()))), 'match');
  t.equal(summary(outcome(lock, gh('release', releasePayload({ action: 'created' })))), 'no_match');
  const nightly = outcome(lock, gh('release', releasePayload({ tag: 'nightly' })));
  t.equal(filterVerdict(nightly, 'tags')?.detail, 'release tag "nightly" matches none of ["v*"]');
  const noTag = outcome(lock, gh('release', { ...releasePayload(), release: {} }));
  t.equal(summary(noTag), 'indeterminate');
});

t.test('review: actions, states from the payload details, base branch', async (t) => {
  const lock = lockWith('rv', trig.review({ states: ['approved'], branches: ['main'] }));
  const payload = reviewPayload();
  const event = gh('pull_request_review', payload);
  const details = githubEventDetails('pull_request_review', payload);
  const ok = outcome(lock, event, { details });
  t.equal(summary(ok), 'match');
  t.equal(filterVerdict(ok, 'states')?.detail, 'review state "approved" is one of ["approved"]');

  const changes = reviewPayload({ state: 'CHANGES_REQUESTED' });
  const no = outcome(lock, gh('pull_request_review', changes), { details: githubEventDetails('pull_request_review', changes) });
  t.equal(filterVerdict(no, 'states')?.detail, 'review state "changes_requested" is not one of ["approved"]');

  // Without details the state cannot be checked: indeterminate, not guessed.
  const unknown = outcome(lock, event);
  t.equal(summary(unknown), 'indeterminate');
  t.match(filterVerdict(unknown, 'states')?.detail, /review state was not supplied/);
  // No state filter: details are not needed.
  t.equal(summary(outcome(lockWith('rv', trig.review()), event)), 'match');
  const dev = outcome(lock, gh('pull_request_review', reviewPayload({ baseRef: 'dev' })), { details });
  t.equal(filterVerdict(dev, 'branches')?.detail, 'base branch "dev" matches none of ["main"]');
});

t.test('review_comment: actions and base branch', async (t) => {
  const lock = lockWith('rc', trig.review_comment({ branches: ['main'] }));
  t.equal(summary(outcome(lock, gh('pull_request_review_comment', reviewCommentPayload()))), 'match');
  t.equal(summary(outcome(lock, gh('pull_request_review_comment', reviewCommentPayload({ action: 'edited' })))), 'no_match');
  t.equal(summary(outcome(lock, gh('pull_request_review_comment', reviewCommentPayload({ baseRef: 'x' })))), 'no_match');
});

t.test('dispatch: branches, own repository, target workflow', async (t) => {
  const lock = lockWith('deploy', trig.dispatch({ branches: ['main'] }));
  const event = gh('workflow_dispatch', workflowDispatchPayload());
  t.equal(summary(outcome(lock, event, { lockRepository: 'acme/app' })), 'match');
  t.equal(summary(outcome(lock, gh('workflow_dispatch', workflowDispatchPayload({ ref: 'refs/heads/dev' })))), 'no_match');
  // repository_dispatch targets the default branch.
  t.equal(summary(outcome(lock, gh('repository_dispatch', repositoryDispatchPayload()))), 'match');
  // Dispatch is bound to its own repository even without a repositories field.
  const other = outcome(lock, event, { lockRepository: 'acme/other' });
  t.equal(summary(other), 'no_match');
  t.match(filterVerdict(other, 'repositories')?.detail, /not this workflow's repository "acme\/other"/);
  const target = outcome(lock, event, { targetWorkflow: 'release' });
  t.equal(filterVerdict(target, 'target')?.detail, 'the event targets workflow "release", not "deploy"');
  t.equal(summary(outcome(lock, event, { targetWorkflow: 'deploy' })), 'match');
});

t.test('create and delete: ref types, branches, tags', async (t) => {
  const lock = lockWith('cr', trig.create({ refTypes: ['branch'], branches: ['feature/*'] }));
  t.equal(summary(outcome(lock, gh('create', refEventPayload()))), 'match');
  const tagCreate = outcome(lock, gh('create', refEventPayload({ ref: 'v1', refType: 'tag' })));
  t.equal(filterVerdict(tagCreate, 'refTypes')?.detail, 'ref type "tag" is not one of ["branch"]');
  t.equal(filterVerdict(tagCreate, 'branches'), undefined, 'branch filter does not apply to a tag');
  t.equal(summary(outcome(lock, gh('create', refEventPayload({ ref: 'bugfix/y' })))), 'no_match');
  t.equal(summary(outcome(lock, gh('delete', refEventPayload()))), 'no_match', 'a delete is not a create');

  const del = lockWith('del', trig.delete({ tags: ['v*'] }));
  t.equal(summary(outcome(del, gh('delete', refEventPayload({ ref: 'v2', refType: 'tag' })))), 'match');
  t.equal(summary(outcome(del, gh('delete', refEventPayload({ ref: 'old', refType: 'tag' })))), 'no_match');
  t.equal(summary(outcome(del, gh('delete', refEventPayload()))), 'match', 'tags filter does not apply to a branch');
  const noRef = outcome(del, gh('delete', { ...refEventPayload(), ref: null }));
  t.equal(summary(noRef), 'indeterminate');
});

t.test('status: states and context patterns', async (t) => {
  const lock = lockWith('st', trig.status({ states: ['failure', 'error'], contexts: ['ci/*'] }));
  const failed = statusPayload({ state: 'failure', context: 'ci/lint' });
  t.equal(summary(outcome(lock, gh('status', failed), { details: githubEventDetails('status', failed) })), 'match');
  const ok = statusPayload({ state: 'success' });
  t.equal(summary(outcome(lock, gh('status', ok), { details: githubEventDetails('status', ok) })), 'no_match');
  const ext = statusPayload({ state: 'error', context: 'external/scan' });
  const o = outcome(lock, gh('status', ext), { details: githubEventDetails('status', ext) });
  t.equal(filterVerdict(o, 'contexts')?.detail, 'status context "external/scan" matches none of ["ci/*"]');
  t.equal(summary(outcome(lock, gh('status', failed))), 'indeterminate');
});

t.test('workflow_run: workflows, actions, conclusions, head branch', async (t) => {
  const lock = lockWith('after', trig.workflow_run({ workflows: ['build'], conclusions: ['failure'], branches: ['main'] }));
  const details = (p: unknown) => ({ details: githubEventDetails('workflow_run', p) });
  const failed = workflowRunPayload({ conclusion: 'failure' });
  t.equal(summary(outcome(lock, gh('workflow_run', failed), details(failed))), 'match');
  const other = workflowRunPayload({ name: 'lint', conclusion: 'failure' });
  t.equal(filterVerdict(outcome(lock, gh('workflow_run', other), details(other)), 'workflows')?.detail, 'workflow "lint" is not one of ["build"]');
  const running = workflowRunPayload({ action: 'in_progress', conclusion: null });
  const r = outcome(lock, gh('workflow_run', running), details(running));
  t.equal(filterVerdict(r, 'actions')?.verdict, 'fail');
  t.match(filterVerdict(r, 'conclusions')?.detail, /no conclusion yet/);
  const dev = workflowRunPayload({ conclusion: 'failure', headBranch: 'dev' });
  t.equal(filterVerdict(outcome(lock, gh('workflow_run', dev), details(dev)), 'branches')?.detail, 'head branch "dev" matches none of ["main"]');
  t.equal(summary(outcome(lock, gh('workflow_run', failed))), 'indeterminate', 'without details');
});

t.test('schedule fires only its own trigger', async (t) => {
  const lock = lockOf([
    workflow('nightly', [trig.push({ branches: ['main'] }), trig.schedule(), trig.schedule({ cron: '0 12 * * 1' })]),
    workflow('other', [trig.schedule()]),
  ]);
  const fire = svcEvent('schedule', scheduleFireName('nightly', 2));
  const r = matchLock(fire, lock);
  t.same(r.matched.map((m) => [m.workflow, m.triggerIndex]), [['nightly', 2]]);
  t.equal(r.unmatched[0]?.workflow, 'other');
  t.equal(r.unmatched[0]?.reasons.find((v) => v.filter === 'schedule')?.detail, 'the schedule fire "nightly#2" is for another trigger, not "other#0"');
  // A schedule event that does not come from the orchestrator matches nothing.
  const forged = svcEvent('schedule', 'nightly#1', { provider: 'generic' });
  t.equal(matchLock(forged, lock).matched.length, 0);
  // A provider event never matches a schedule trigger.
  t.same(matchLock(gh('push', pushPayload({ ref: 'refs/heads/dev' })), lock).matched, []);

  const m = matchSchedule(lock, 'nightly', 1);
  t.equal(m?.triggerIndex, 1);
  t.equal(m?.trigger.type, 'schedule');
  t.same(m?.jobs, ['build']);
  t.equal(matchSchedule(lock, 'nightly', 0), null, 'not a schedule trigger');
  t.equal(matchSchedule(lock, 'nightly', 9), null);
  t.equal(matchSchedule(lock, 'missing', 0), null);
});

t.test('webhook: generic event name from the action, or the custom event name', async (t) => {
  const lock = lockWith('hook', trig.webhook({ events: ['deploy', 'rollback'] }));
  const o = outcome(lock, genericEvent('deploy'));
  t.equal(summary(o), 'match');
  t.equal(filterVerdict(o, 'events')?.detail, 'webhook event "deploy" is one of ["deploy", "rollback"]');
  t.equal(summary(outcome(lock, genericEvent('other'))), 'no_match');
  t.equal(summary(outcome(lock, genericEvent('other', { customEventName: 'rollback' }))), 'match');
  t.equal(summary(outcome(lock, gh('push', pushPayload()))), 'no_match');
});

t.test('custom event trigger', async (t) => {
  const lock = lockWith('ev', trig.event({ name: 'artifact.ready' }));
  t.equal(summary(outcome(lock, svcEvent('event', 'artifact.ready'))), 'match');
  const o = outcome(lock, svcEvent('event', 'artifact.gone'));
  t.equal(filterVerdict(o, 'name')?.detail, 'event name "artifact.gone" is not "artifact.ready"');
  // Only the orchestrator emits custom events.
  const forged = outcome(lock, svcEvent('event', 'artifact.ready', { provider: 'generic' }));
  t.match(filterVerdict(forged, 'type')?.detail, /accept only internal events/);
});

t.test('internal events: workflow_complete, job_complete, lifecycle, workflows_failed_batch', async (t) => {
  const wc = lockWith('notify', trig.workflow_complete({ workflows: ['ci'], statuses: ['failed'] }));
  const done = svcEvent('workflow_complete', 'workflow_complete');
  t.equal(summary(outcome(wc, done, { internal: { workflow: 'ci', status: 'failed' } })), 'match');
  const ok = outcome(wc, done, { internal: { workflow: 'ci', status: 'success' } });
  t.equal(filterVerdict(ok, 'statuses')?.detail, 'status "success" is not one of ["failed"]');
  t.equal(summary(outcome(wc, done)), 'indeterminate', 'payload fields not supplied');
  t.equal(summary(outcome(lockWith('any', trig.workflow_complete()), done)), 'match', 'no filters: any completion');

  const jc = lockWith('jobs', trig.job_complete({ jobs: ['deploy'] }));
  const jobDone = svcEvent('job_complete', 'job_complete');
  t.equal(summary(outcome(jc, jobDone, { internal: { workflow: 'cd', job: 'deploy', status: 'success' } })), 'match');
  t.equal(summary(outcome(jc, jobDone, { internal: { workflow: 'cd', job: 'test', status: 'success' } })), 'no_match');

  const lc = lockWith('life', trig.lifecycle({ events: ['repository.created'] }));
  t.equal(summary(outcome(lc, svcEvent('lifecycle', 'repository.created'))), 'match');
  t.equal(summary(outcome(lc, svcEvent('lifecycle', 'repository.deleted'))), 'no_match');

  const fb = lockWith('page', trig.workflows_failed_batch({ workflows: ['ci'], threshold: 3, windowSeconds: 600 }));
  const batch = svcEvent('workflows_failed_batch', 'workflows_failed_batch');
  let asked: unknown;
  const three = outcome(fb, batch, {
    internal: {
      workflow: 'ci',
      countFailures: (q) => {
        asked = q;
        return 3;
      },
    },
  });
  t.equal(summary(three), 'match');
  t.same(asked, { workflows: ['ci'], windowSeconds: 600 });
  t.equal(filterVerdict(three, 'threshold')?.detail, '3 failures in the last 600 s: the threshold of 3 is reached');
  const one = outcome(fb, batch, { internal: { workflow: 'ci', countFailures: () => 1 } });
  t.equal(filterVerdict(one, 'threshold')?.detail, '1 failure in the last 600 s: the threshold of 3 is not reached');
  t.equal(summary(outcome(fb, batch, { internal: { workflow: 'ci' } })), 'indeterminate');
  const broken = outcome(fb, batch, {
    internal: {
      workflow: 'ci',
      countFailures: () => {
        throw new Error('db down');
      },
    },
  });
  t.equal(summary(broken), 'indeterminate');
  t.match(filterVerdict(broken, 'threshold')?.detail, /db down/);

  // An internal trigger never matches a provider event of the same type name.
  t.equal(summary(outcome(wc, svcEvent('workflow_complete', 'workflow_complete', { provider: 'github' }), { internal: { workflow: 'ci', status: 'failed' } })), 'no_match');
});

t.test('an event that belongs to no trigger family matches nothing', async (t) => {
  const event = gh('deployment', { repository: { full_name: 'acme/app' } });
  t.equal(event.type, null);
  const o = outcome(lockWith('ci', trig.push()), event);
  t.equal(summary(o), 'no_match');
  t.match(filterVerdict(o, 'type')?.detail, /belongs to no trigger family/);
});

t.test('several triggers: the first matching one is reported, with all earlier verdicts', async (t) => {
  const lock = lockOf([
    workflow('multi', [trig.push({ branches: ['main'] }), trig.push({ branches: ['feature/*'], requires: [{ type: 'file-exists', path: 'package.json' }] }), trig.push()], [
      job('build'),
      job('matrix', { dynamic: true }),
      job('test'),
    ]),
  ]);
  const o = outcome(lock, gh('push', pushPayload({ ref: 'refs/heads/feature/x' })));
  t.ok(o.matched);
  if (!o.matched) return;
  t.equal(o.match.triggerIndex, 1);
  t.same(o.match.trigger, lock.workflows[0]!.triggers[1]);
  t.same(o.match.jobs, ['build', 'test']);
  t.same(o.match.dynamicJobs, ['matrix']);
  t.same(o.match.requires, [{ type: 'file-exists', path: 'package.json' }]);
  t.equal(o.match.orgWide, false);
  t.equal(o.match.needsChangedFiles, false);
  t.same([...new Set(o.match.verdicts.map((v) => v.trigger))], [0, 1], 'trigger 2 is not evaluated');
  t.equal(o.match.verdicts.find((v) => v.trigger === 0 && v.filter === 'branches')?.verdict, 'fail');

  // explainWorkflow evaluates every trigger.
  const all = explainWorkflow(gh('push', pushPayload({ ref: 'refs/heads/feature/x' })), lock, 'multi');
  t.same([...new Set(all?.map((v) => v.trigger))], [0, 1, 2]);
  t.equal(explainWorkflow(gh('push', pushPayload()), lock, 'nope'), null);
});

t.test('a workflow is indeterminate only when no trigger matched and one could not be decided', async (t) => {
  const lock = lockOf([
    workflow('undecided', [trig.pr(), trig.push({ commitMessage: { kind: 'glob', pattern: 'release:*' } })]),
    workflow('decided', [trig.push({ branches: ['main'], commitMessage: { kind: 'glob', pattern: 'release:*' } })]),
    workflow('rescued', [trig.push({ commitMessage: { kind: 'glob', pattern: 'release:*' } }), trig.push()]),
  ]);
  const deletion = gh('push', pushPayload({ ref: 'refs/heads/feature/x', after: '0'.repeat(40) }));
  const r = matchLock(deletion, lock);
  t.same(r.unmatched.map((u) => [u.workflow, u.verdict]), [
    ['undecided', 'indeterminate'],
    ['decided', 'no_match'],
  ]);
  t.same(r.matched.map((m) => [m.workflow, m.triggerIndex]), [['rescued', 1]]);
});

t.test('results keep lock order and an empty lock matches nothing', async (t) => {
  const lock = lockOf([workflow('b', [trig.push()]), workflow('a', [trig.push()]), workflow('c', [trig.pr()])]);
  const r = matchLock(gh('push', pushPayload()), lock);
  t.same(r.matched.map((m) => m.workflow), ['b', 'a']);
  t.same(r.unmatched.map((m) => m.workflow), ['c']);
  t.same(matchLock(gh('push', pushPayload()), lockOf([])), { matched: [], unmatched: [] });
  // Matching the same lock object twice gives equal answers (compiled once, reused).
  t.same(matchLock(gh('push', pushPayload()), lock), r);
});

t.test('compiled state never leaks between locks, even ones claiming the same contentHash', async (t) => {
  const a = lockWith('ci', trig.push({ branches: ['main'] }));
  const b = { ...lockWith('ci', trig.push({ branches: ['dev'] })), contentHash: a.contentHash };
  const event = gh('push', pushPayload());
  t.equal(matchLock(event, a).matched.length, 1);
  t.equal(matchLock(event, b).matched.length, 0);
  // A re-parsed copy of the same lock answers the same.
  const copy = JSON.parse(JSON.stringify(a)) as typeof a;
  t.same(matchLock(event, copy), matchLock(event, a));
});
