// Filter-level behaviour of one trigger: paths, commit messages, repository scope and the
// organization-wide policy.
import t from 'tap';
import { lockMessageRegexes, lockUsesPathFilters, matchLock, workflowsNeedChangedFiles } from '../../../workflow/matching/match-lock.ts';
import { messageRegexKey } from '../../../workflow/matching/patterns.ts';
import type { OrgWidePolicy, RegexResult } from '../../../workflow/matching/types.ts';
import { pullRequestPayload, pushPayload, ZERO } from '../../fixtures/github-payloads.ts';
import { lockOf, lockWith, trig, workflow } from '../../fixtures/locks.ts';
import { filterVerdict, gh, outcome, summary } from './helpers.ts';

const push = (opts: Parameters<typeof pushPayload>[0] = {}) => gh('push', pushPayload(opts));

t.test('paths: changed files from the payload', async (t) => {
  const lock = lockWith('web', trig.push({ paths: ['web/**', '!web/docs/**'] }));
  const hit = outcome(lock, push({ files: { modified: ['README.md', 'web/src/app.ts'] } }));
  t.equal(summary(hit), 'match');
  t.equal(filterVerdict(hit, 'paths')?.detail, 'changed file "web/src/app.ts" matches "web/**" (one of 2 changed files)');
  t.ok(hit.matched && hit.match.needsChangedFiles);

  const docs = outcome(lock, push({ files: { modified: ['web/docs/a.md'] } }));
  t.equal(summary(docs), 'no_match');
  t.equal(filterVerdict(docs, 'paths')?.detail, 'the only changed file ("web/docs/a.md") is selected by ["web/**", "!web/docs/**"]');

  const many = outcome(lock, push({ files: { modified: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] } }));
  t.equal(filterVerdict(many, 'paths')?.detail, 'none of the 7 changed files ("a", "b", "c", "d", "e", … 2 more) is selected by ["web/**", "!web/docs/**"]');

  // Dot files are files like any other.
  t.equal(summary(outcome(lockWith('gh', trig.push({ paths: ['**/*.yml'] })), push({ files: { added: ['.github/ci.yml'] } }))), 'match');
  // Removed files count as changes.
  t.equal(summary(outcome(lock, push({ files: { modified: [], removed: ['web/old.ts'] } }))), 'match');
});

t.test('paths: an empty commit changes no files and fails the filter', async (t) => {
  const lock = lockWith('web', trig.push({ paths: ['web/**'] }));
  const o = outcome(lock, push(), { changedFiles: [] });
  t.equal(summary(o), 'no_match');
  t.equal(filterVerdict(o, 'paths')?.detail, 'the event changes no files, so none matches ["web/**"]');
});

t.test('paths: a branch deletion changes no files, without fetching anything', async (t) => {
  const lock = lockWith('web', trig.push({ paths: ['web/**'] }));
  const deletion = push({ ref: 'refs/heads/old', after: ZERO });
  t.equal(deletion.changedFiles, null);
  t.same(workflowsNeedChangedFiles(lock, deletion), []);
  const o = outcome(lock, deletion);
  t.equal(summary(o), 'no_match');
  t.equal(filterVerdict(o, 'paths')?.detail, 'the push deletes "refs/heads/old", so it changes no files and none matches ["web/**"]');
});

t.test('paths: files supplied by the caller override the payload', async (t) => {
  const lock = lockWith('web', trig.push({ paths: ['web/**'] }));
  t.equal(summary(outcome(lock, push({ files: { modified: ['README.md'] } }), { changedFiles: ['web/x.ts'] })), 'match');
});

t.test('paths: missing changed files are indeterminate, naming why', async (t) => {
  const lock = lockWith('web', trig.push({ paths: ['web/**'] }));
  const event = { ...push(), changedFiles: null };
  const unavailable = outcome(lock, event, { changedFilesUnavailable: 'the forge API returned 502' });
  t.equal(summary(unavailable), 'indeterminate');
  t.equal(filterVerdict(unavailable, 'paths')?.detail, 'the changed files are unavailable: the forge API returned 502, so ["web/**"] cannot be checked');
  t.match(filterVerdict(outcome(lock, event, { changedFilesUnavailable: true }), 'paths')?.detail, /^the changed files are unavailable, so/);
  const notSupplied = outcome(lock, event);
  t.equal(summary(notSupplied), 'indeterminate');
  t.match(filterVerdict(notSupplied, 'paths')?.detail, /were not supplied \(fetch them when workflowsNeedChangedFiles/);
  // A branch that fails anyway stays a plain no_match.
  t.equal(summary(outcome(lockWith('web', trig.push({ branches: ['dev'], paths: ['web/**'] })), event)), 'no_match');
});

t.test('workflowsNeedChangedFiles and lockUsesPathFilters', async (t) => {
  const lock = lockOf([
    workflow('web', [trig.push({ branches: ['main'], paths: ['web/**'] })]),
    workflow('dev-only', [trig.push({ branches: ['dev'], paths: ['api/**'] })]),
    workflow('plain', [trig.push()]),
    workflow('pr-paths', [trig.pr({ paths: ['docs/**'] }), trig.push({ paths: ['docs/**'] })]),
  ]);
  t.equal(lockUsesPathFilters(lock), true);
  t.equal(lockUsesPathFilters(lockOf([workflow('plain', [trig.push(), trig.pr()])])), false);
  const event = { ...push(), changedFiles: null };
  t.same(workflowsNeedChangedFiles(lock, event), ['web', 'pr-paths']);
  t.same(workflowsNeedChangedFiles(lock, push({ files: { modified: ['x'] } })), [], 'the payload already lists them');
  t.same(workflowsNeedChangedFiles(lock, event, { changedFiles: ['x'] }), [], 'the caller already has them');
  const pr = gh('pull_request', pullRequestPayload());
  t.same(workflowsNeedChangedFiles(lock, pr), ['pr-paths']);
  // After fetching: matched with the files.
  const r = matchLock(event, lock, { changedFiles: ['web/a.ts'] });
  t.same(r.matched.map((m) => m.workflow), ['web', 'plain']);
});

t.test('commitMessage glob: whole message, * crosses slashes and lines, brackets literal', async (t) => {
  const skip = lockWith('ci', trig.push({ commitMessage: { kind: 'glob', pattern: '*[skip ci]*' } }));
  t.equal(summary(outcome(skip, push({ message: 'fix: a/b\n\nbody line\n[skip ci]' }))), 'match');
  const plain = outcome(skip, push({ message: 'fix bug in ci' }));
  t.equal(summary(plain), 'no_match');
  t.equal(filterVerdict(plain, 'commitMessage')?.detail, 'commit message "fix bug in ci" does not match glob "*[skip ci]*"');

  const release = lockWith('rel', trig.push({ commitMessage: { kind: 'glob', pattern: 'release: *' } }));
  t.equal(summary(outcome(release, push({ message: 'release: v1/2 ../notes\n\nsee docs/a.md' }))), 'match');
  // Anchored at the start: a later line does not count.
  t.equal(summary(outcome(release, push({ message: 'chore\n\nrelease: v1' }))), 'no_match');
  // Case-sensitive.
  t.equal(summary(outcome(release, push({ message: 'Release: v1' }))), 'no_match');
  // Braces expand.
  const either = lockWith('e', trig.push({ commitMessage: { kind: 'glob', pattern: '{feat,fix}:*' } }));
  t.equal(summary(outcome(either, push({ message: 'fix: x' }))), 'match');
  t.equal(summary(outcome(either, push({ message: 'docs: x' }))), 'no_match');
  // Long first lines are shortened in the detail.
  const long = outcome(release, push({ message: 'x'.repeat(200) }));
  t.match(filterVerdict(long, 'commitMessage')?.detail, /^commit message "x{71}…" does not match/);
});

t.test('commitMessage regex: unanchored search with flags', async (t) => {
  const lock = lockWith('ci', trig.push({ commitMessage: { kind: 'regex', source: '^deploy\\b', flags: 'im' } }));
  const o = outcome(lock, push({ message: 'chore: bump\nDEPLOY now' }));
  t.equal(summary(o), 'match');
  t.equal(filterVerdict(o, 'commitMessage')?.detail, 'commit message "chore: bump" matches /^deploy\\b/im');
  t.equal(summary(outcome(lock, push({ message: 'redeploy' }))), 'no_match');
  // Same answer twice (no lastIndex state).
  t.equal(summary(outcome(lock, push({ message: 'deploy' }))), 'match');
  t.equal(summary(outcome(lock, push({ message: 'deploy' }))), 'match');
});

t.test('commitMessage regex with outcomes evaluated by the caller (regexResults): no expression runs here', async (t) => {
  const hostile = { kind: 'regex' as const, source: '(a+)+$', flags: '' };
  const lock = lockOf([
    workflow('hostile', [trig.push({ commitMessage: hostile })]),
    workflow('deploy', [trig.push({ commitMessage: { kind: 'regex', source: '^deploy', flags: 'i' } }), trig.pr({ commitMessage: { kind: 'regex', source: 'pr-only', flags: '' } })]),
    workflow('again', [trig.push({ commitMessage: hostile })]),
    workflow('plain', [trig.push({ commitMessage: { kind: 'glob', pattern: '*' } })]),
  ]);
  const event = push({ message: 'aaaa' });
  // Each expression the event would test, once: not the pull-request trigger's, not the glob.
  const regexes = lockMessageRegexes(lock, event);
  t.same(regexes.map((r) => r.shown), ['/(a+)+$/', '/^deploy/i']);
  t.equal(regexes[0]?.key, messageRegexKey('(a+)+$', ''));

  // The outcome given wins over running the expression (which would match "aaaa").
  const results = new Map<string, RegexResult>([[regexes[0]!.key, { undecided: 'took longer than 100 ms' }], [regexes[1]!.key, true]]);
  const r = matchLock(event, lock, { regexResults: results });
  t.same(r.matched.map((m) => m.workflow), ['deploy', 'plain']);
  t.same(r.unmatched.map((u) => [u.workflow, u.verdict]), [['hostile', 'indeterminate'], ['again', 'indeterminate']]);
  t.equal(
    r.unmatched[0]?.reasons.find((v) => v.filter === 'commitMessage')?.detail,
    'regular expression /(a+)+$/ took longer than 100 ms on commit message "aaaa"; treated as not matching',
  );
  const decided = matchLock(event, lock, { regexResults: new Map([[regexes[0]!.key, false], [regexes[1]!.key, false]]) });
  t.same(decided.unmatched.map((u) => [u.workflow, u.verdict]), [['hostile', 'no_match'], ['deploy', 'no_match'], ['again', 'no_match']]);
  // An expression the caller did not evaluate is not run either.
  const missing = matchLock(event, lock, { regexResults: new Map() });
  t.match(missing.unmatched[0]?.reasons.find((v) => v.filter === 'commitMessage')?.detail, /^regular expression \/\(a\+\)\+\$\/ was not evaluated on commit message "aaaa"/);
  // Without regexResults (svc preview, the pure matcher) it runs as before.
  t.same(matchLock(event, lock).matched.map((m) => m.workflow), ['hostile', 'again', 'plain']);
});

t.test('commitMessage on a branch deletion: indeterminate, and the workflow does not run', async (t) => {
  const lock = lockWith('ci', trig.push({ commitMessage: { kind: 'glob', pattern: '*' } }));
  const deletion = push({ ref: 'refs/heads/feature/x', after: ZERO });
  t.equal(deletion.deleted, true);
  t.equal(deletion.commitMessage, null);
  const r = matchLock(deletion, lock);
  t.same(r.matched, []);
  t.equal(r.unmatched[0]?.verdict, 'indeterminate');
  t.same(r.unmatched[0]?.reasons.find((v) => v.filter === 'commitMessage'), {
    trigger: 0,
    triggerType: 'push',
    filter: 'commitMessage',
    verdict: 'indeterminate',
    detail: 'the push deletes "refs/heads/feature/x", so it carries no commit message to test against glob "*"',
  });
  // The same trigger without a commitMessage filter runs on the deletion.
  t.equal(summary(outcome(lockWith('ci', trig.push()), deletion)), 'match');
  // A push whose head commit is absent from the payload.
  const noMessage = outcome(lock, push({ message: null }));
  t.equal(filterVerdict(noMessage, 'commitMessage')?.detail, 'the event carries no commit message to test against glob "*"');
});

t.test('commitMessage on a pull request: indeterminate unless the caller supplies the head message', async (t) => {
  const lock = lockWith('pr', trig.pr({ commitMessage: { kind: 'glob', pattern: '*[deploy]*' } }));
  const event = gh('pull_request', pullRequestPayload());
  t.equal(summary(outcome(lock, event)), 'indeterminate');
  t.equal(summary(outcome(lock, event, { commitMessage: 'feat: x [deploy]' })), 'match');
  t.equal(summary(outcome(lock, event, { commitMessage: 'feat: x' })), 'no_match');
});

t.test('an invalid regex is indeterminate with the error text, never a throw', async (t) => {
  const lock = lockWith('ci', trig.push({ commitMessage: { kind: 'regex', source: '(unclosed', flags: '' } }));
  const o = outcome(lock, push());
  t.equal(summary(o), 'indeterminate');
  t.match(filterVerdict(o, 'commitMessage')?.detail, /^regular expression \/\(unclosed\/ is not valid: .*Unterminated group/);
});

t.test('an uncompilable glob is indeterminate with the error text', async (t) => {
  const huge = 'a'.repeat(70_000);
  const o = outcome(lockWith('ci', trig.push({ branches: [huge] })), push());
  t.equal(summary(o), 'indeterminate');
  t.match(filterVerdict(o, 'branches')?.detail, /is not a valid glob: .*exceeds maximum allowed length/);
  const p = outcome(lockWith('ci', trig.push({ paths: [huge] })), push());
  t.equal(summary(p), 'indeterminate');
  t.match(filterVerdict(p, 'paths')?.detail, /is not a valid glob/);
  const r = outcome(lockWith('ci', trig.push({ repositories: ['acme/*', `acme/${huge}`] })), push());
  t.equal(summary(r), 'indeterminate');
  t.match(filterVerdict(r, 'repositories')?.detail, /is not a valid glob/);
  const m = outcome(lockWith('ci', trig.push({ commitMessage: { kind: 'glob', pattern: huge } })), push());
  t.equal(summary(m), 'indeterminate');
  t.match(filterVerdict(m, 'commitMessage')?.detail, /is not valid/);
});

t.test('repository scope without patterns: the lock repository only', async (t) => {
  const lock = lockWith('ci', trig.push());
  t.equal(summary(outcome(lock, push(), { lockRepository: 'acme/app' })), 'match');
  t.equal(summary(outcome(lock, push(), { lockRepository: 'ACME/App' })), 'match', 'case-insensitive');
  t.equal(summary(outcome(lock, push())), 'match', 'no lock repository given: the event repository is taken as its own');
  const other = outcome(lock, push({ repository: 'acme/lib' }), { lockRepository: 'acme/app' });
  t.equal(summary(other), 'no_match');
  t.equal(filterVerdict(other, 'repositories')?.detail, 'repository "acme/lib" is not this workflow\'s repository "acme/app" and the trigger lists no repository patterns');
  const noRepo = outcome(lock, { ...push(), repository: null });
  t.equal(filterVerdict(noRepo, 'repositories')?.detail, 'the event names no repository');
});

t.test('organization-wide: patterns plus the two-axis policy', async (t) => {
  const lock = lockWith('audit', trig.push({ repositories: ['acme/*', '!acme/secret'] }));
  const allow: OrgWidePolicy = { workflowRepositoryAllowed: () => true, sourceRepositoryAllowed: () => true };
  const fromLib = push({ repository: 'acme/lib' });
  const base = { lockRepository: 'acme/ci' };

  const ok = outcome(lock, fromLib, { ...base, orgWidePolicy: allow });
  t.equal(summary(ok), 'match');
  t.ok(ok.matched && ok.match.orgWide);
  t.equal(filterVerdict(ok, 'repositories')?.detail, 'repository "acme/lib" matches "acme/*" (organization-wide; both policy axes allow)');

  const noPolicy = outcome(lock, fromLib, base);
  t.equal(summary(noPolicy), 'no_match', 'fails closed without a policy');
  t.match(filterVerdict(noPolicy, 'repositories')?.detail, /no organization-wide policy was given/);

  const calls: string[] = [];
  const workflowDenied = outcome(lock, fromLib, {
    ...base,
    orgWidePolicy: {
      workflowRepositoryAllowed: (r) => (calls.push(`w:${r}`), false),
      sourceRepositoryAllowed: (r) => (calls.push(`s:${r}`), true),
    },
  });
  t.equal(summary(workflowDenied), 'no_match');
  t.equal(filterVerdict(workflowDenied, 'repositories')?.detail, 'workflow repository "acme/ci" may not run organization-wide workflows (workflow repository axis of the policy)');
  t.same(calls, ['w:acme/ci', 's:acme/lib'], 'each axis is asked about its own repository');

  const sourceDenied = outcome(lock, fromLib, { ...base, orgWidePolicy: { ...allow, sourceRepositoryAllowed: () => false } });
  t.equal(filterVerdict(sourceDenied, 'repositories')?.detail, 'source repository "acme/lib" may not trigger organization-wide workflows (source repository axis of the policy)');

  const throwing = outcome(lock, fromLib, {
    ...base,
    orgWidePolicy: {
      ...allow,
      sourceRepositoryAllowed: () => {
        throw new Error('policy store offline');
      },
    },
  });
  t.equal(summary(throwing), 'indeterminate');
  t.match(filterVerdict(throwing, 'repositories')?.detail, /policy store offline/);

  const excluded = outcome(lock, push({ repository: 'acme/secret' }), { ...base, orgWidePolicy: allow });
  t.equal(filterVerdict(excluded, 'repositories')?.detail, 'repository "acme/secret" is excluded by "!acme/secret" in ["acme/*", "!acme/secret"]');
  t.equal(summary(outcome(lock, push({ repository: 'other/lib' }), { ...base, orgWidePolicy: allow })), 'no_match');

  // The workflow's own repository: matched by the patterns, no policy needed, not org-wide.
  const own = outcome(lock, push({ repository: 'acme/ci' }), base);
  t.equal(summary(own), 'match');
  t.ok(own.matched && !own.match.orgWide);
  // Patterns that leave out the own repository leave it out.
  const narrow = lockWith('svc', trig.push({ repositories: ['acme/service-*'] }));
  t.equal(summary(outcome(narrow, push({ repository: 'acme/ci' }), base)), 'no_match');
  // Repository patterns are case-insensitive.
  t.equal(summary(outcome(narrow, push({ repository: 'ACME/Service-a' }), { ...base, orgWidePolicy: allow })), 'match');
});
