import t from 'tap';
import { compileCommitMessage, compilePatternList, describeSelection, quote, select } from '../../../workflow/matching/patterns.ts';
import { pushPayload } from '../../fixtures/github-payloads.ts';
import { lockWith, trig } from '../../fixtures/locks.ts';
import { filterVerdict, gh, outcome, summary } from './helpers.ts';

const selects = (patterns: string[], value: string) => select(compilePatternList('ref', patterns), value).selected;

t.test('the last matching pattern wins', async (t) => {
  t.equal(selects(['release/*', '!release/old'], 'release/new'), true);
  t.equal(selects(['release/*', '!release/old'], 'release/old'), false);
  t.equal(selects(['!release/*', 'release/keep'], 'release/keep'), true, 'a later positive re-includes');
  t.equal(selects(['release/*', '!release/*', 'release/1.*'], 'release/1.2'), true);
  t.equal(selects(['release/*', '!release/*', 'release/1.*'], 'release/2.0'), false);
  t.equal(selects(['main'], 'dev'), false, 'nothing matched in a list with positives: excluded');
});

t.test('a list of only negations means everything except', async (t) => {
  t.equal(selects(['!docs/**'], 'src/a.ts'), true);
  t.equal(selects(['!docs/**'], 'docs/a.md'), false);
  t.equal(selects(['!wip/*', '!tmp/*'], 'main'), true);
  const list = compilePatternList('ref', ['!wip/*']);
  t.equal(describeSelection('branch', 'main', list, select(list, 'main')), 'branch "main" is not excluded by ["!wip/*"]');
  t.equal(describeSelection('branch', 'wip/x', list, select(list, 'wip/x')), 'branch "wip/x" is excluded by "!wip/*" in ["!wip/*"]');
});

t.test('negation through a whole trigger', async (t) => {
  const lock = lockWith('ci', trig.push({ branches: ['!dependabot/**'] }));
  t.equal(summary(outcome(lock, gh('push', pushPayload({ ref: 'refs/heads/main' })))), 'match');
  const bot = outcome(lock, gh('push', pushPayload({ ref: 'refs/heads/dependabot/npm/x' })));
  t.equal(summary(bot), 'no_match');
  t.equal(filterVerdict(bot, 'branches')?.detail, 'branch "dependabot/npm/x" is excluded by "!dependabot/**" in ["!dependabot/**"]');
  const paths = lockWith('ci', trig.push({ paths: ['!**/*.md'] }));
  t.equal(summary(outcome(paths, gh('push', pushPayload({ files: { modified: ['README.md'] } })))), 'no_match');
  t.equal(summary(outcome(paths, gh('push', pushPayload({ files: { modified: ['README.md', 'src/a.ts'] } })))), 'match');
});

t.test('glob kinds', async (t) => {
  t.equal(select(compilePatternList('repository', ['acme/*']), 'ACME/App').selected, true, 'repositories ignore case');
  t.equal(select(compilePatternList('ref', ['Main']), 'main').selected, false, 'refs do not');
  t.equal(select(compilePatternList('path', ['**']), '.github/workflows/x.yml').selected, true, 'dot files');
  t.equal(select(compilePatternList('ref', ['v[0-9]*']), 'v1.2').selected, true, 'brackets are classes in ref globs');
});

t.test('compiled lists and message matchers are cached by their text', async (t) => {
  t.equal(compilePatternList('ref', ['a', 'b']), compilePatternList('ref', ['a', 'b']));
  t.not(compilePatternList('ref', ['a', 'b']), compilePatternList('path', ['a', 'b']));
  t.not(compilePatternList('ref', ['a,b']), compilePatternList('ref', ['a', 'b']));
  const g = { kind: 'glob' as const, pattern: 'x*' };
  t.equal(compileCommitMessage(g), compileCommitMessage({ ...g }));
  t.not(compileCommitMessage({ kind: 'regex', source: 'x', flags: '' }), compileCommitMessage({ kind: 'regex', source: 'x', flags: 'i' }));
});

t.test('message globs', async (t) => {
  const m = (pattern: string, message: string) => {
    const c = compileCommitMessage({ kind: 'glob', pattern });
    return c.ok && c.test(message);
  };
  t.equal(m('*', ''), false, 'an empty message matches nothing but an empty pattern, which the schema refuses');
  t.equal(m('*', 'anything\nat all / ../x'), true);
  t.equal(m('fix?*', 'fix: a'), true);
  t.equal(m('*\\**', 'a * b'), true, 'escaped star is literal');
  t.equal(m('*\\**', 'a b'), false);
  t.equal(m('.*', '.hidden'), true);
});

t.test('details quote values like JSON', async (t) => {
  t.equal(quote('main'), '"main"');
  t.equal(quote('a"b\\c'), '"a\\"b\\\\c"');
  t.equal(quote('line\nbreak'), '"line\\nbreak"');
  t.equal(quote('\ud800'), JSON.stringify('\ud800'));
  t.equal(quote('ü✓'), '"ü✓"');
});
