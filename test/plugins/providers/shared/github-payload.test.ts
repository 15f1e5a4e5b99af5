import t from 'tap';
import { normalizeGithubPayload } from '../../../../plugins/providers/shared/github-payload.ts';
import { compileSchema } from '../../../../schemas/validate.ts';
import { NormalizedEvent } from '../../../../schemas/event.ts';
import { issueCommentPayload, pullRequestPayload, pushPayload, SHA_A, SHA_B, ZERO } from '../../../fixtures/github-payloads.ts';

const check = compileSchema(NormalizedEvent);

t.test('push to a branch', async (t) => {
  const e = normalizeGithubPayload('github', 'push', pushPayload({ files: { added: ['src/a.ts'], modified: ['README.md'] } }));
  t.ok(check.check(e), 'matches the schema');
  t.match(e, { type: 'push', branch: 'main', tag: null, sha: SHA_A, beforeSha: SHA_B, deleted: false, commitMessage: 'Initial commit', eventName: 'push' });
  t.same(e.repository?.fullName, 'acme/app');
  t.same(e.changedFiles, ['README.md', 'src/a.ts']);
  t.same(e.sender, { login: 'alice', id: '7' });
  t.equal(e.installationId, '99');
});

t.test('push of a tag is a tag event', async (t) => {
  const e = normalizeGithubPayload('github', 'push', pushPayload({ ref: 'refs/tags/v1.2.0' }));
  t.match(e, { type: 'tag', tag: 'v1.2.0', branch: null });
});

t.test('branch deletion carries no sha and no commit message', async (t) => {
  const e = normalizeGithubPayload('github', 'push', pushPayload({ after: ZERO }));
  t.match(e, { type: 'push', deleted: true, sha: null, commitMessage: null, changedFiles: null });
  t.ok(check.check(e));
});

t.test('more than 19 commits: changed files must be fetched', async (t) => {
  const p = pushPayload();
  p.commits = Array.from({ length: 20 }, () => p.commits[0]!);
  t.equal(normalizeGithubPayload('github', 'push', p).changedFiles, null);
});

t.test('same-repository pull request', async (t) => {
  const e = normalizeGithubPayload('github', 'pull_request', pullRequestPayload());
  t.ok(check.check(e));
  t.match(e, { type: 'pr', action: 'opened', eventName: 'pull_request:opened', branch: 'main', ref: 'refs/heads/main', sha: SHA_A });
  t.match(e.pullRequest, { isFork: false, headRef: 'feature', baseRef: 'main', headRepository: 'acme/app', number: 5 });
});

t.test('fork pull request', async (t) => {
  const e = normalizeGithubPayload('github', 'pull_request', pullRequestPayload({ headRepo: 'mallory/app', action: 'synchronize' }));
  t.match(e.pullRequest, { isFork: true, headRepository: 'mallory/app' });
  t.equal(e.eventName, 'pull_request:synchronize');
});

t.test('pull request whose head repository is gone counts as a fork', async (t) => {
  const p = pullRequestPayload();
  (p.pull_request.head as { repo: unknown }).repo = null;
  t.equal(normalizeGithubPayload('github', 'pull_request', p).pullRequest?.isFork, true);
});

t.test('issue comment', async (t) => {
  const e = normalizeGithubPayload('github', 'issue_comment', issueCommentPayload('/svc approve'));
  t.match(e, { type: 'comment', comment: { body: '/svc approve', author: 'carol', id: '1001' } });
});

t.test('other events map to their trigger family', async (t) => {
  const cases: Array<[string, Record<string, unknown>, string | null]> = [
    ['release', { action: 'published', release: { tag_name: 'v2' }, repository: {} }, 'release'],
    ['create', { ref: 'feat', ref_type: 'branch' }, 'create'],
    ['delete', { ref: 'v1', ref_type: 'tag' }, 'delete'],
    ['workflow_dispatch', { ref: 'refs/heads/main' }, 'dispatch'],
    ['repository_dispatch', { action: 'deploy' }, 'dispatch'],
    ['status', { sha: SHA_A, state: 'success' }, 'status'],
    ['fork', {}, 'fork'],
    ['star', { action: 'created' }, 'star'],
    ['watch', { action: 'started' }, 'watch'],
    ['workflow_run', { action: 'completed' }, 'workflow_run'],
    ['pull_request_review', pullRequestPayload({ action: 'submitted' }), 'review'],
    ['pull_request_review_comment', { ...pullRequestPayload({ action: 'created' }), comment: { id: 1, body: 'x', user: { login: 'u' } } }, 'review_comment'],
    ['ping', { zen: 'hi' }, null],
  ];
  for (const [name, payload, type] of cases) {
    const e = normalizeGithubPayload('github', name, payload);
    t.equal(e.type, type, name);
    t.ok(check.check(e), `${name} matches the schema`);
  }
  t.equal(normalizeGithubPayload('github', 'release', { release: { tag_name: 'v2' } }).tag, 'v2');
  t.equal(normalizeGithubPayload('github', 'delete', { ref: 'v1', ref_type: 'tag' }).tag, 'v1');
  t.equal(normalizeGithubPayload('github', 'repository_dispatch', { action: 'deploy' }).customEventName, 'deploy');
});

t.test('hostile payloads: wrong types read as absent, non-objects refused', async (t) => {
  const e = normalizeGithubPayload('github', 'push', { ref: 5, after: { x: 1 }, repository: 'nope', sender: [], commits: 'x' });
  t.ok(check.check(e));
  t.match(e, { repository: null, sha: null });
  for (const bad of [null, [], 'str', 3]) {
    t.throws(() => normalizeGithubPayload('github', 'push', bad), { code: 'SVC_ERR_EVENT_INVALID_PAYLOAD' });
  }
});
