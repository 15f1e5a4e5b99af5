// `svc run remote --junit` (cli/remote-run/junit.ts): well-formed XML (checked by a real XML
// parser) with one testsuite per fixture run and one testcase per job; failures, skips, a run
// that was never created, and hostile text (markup, control characters) escaped.
import t from 'tap';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { junitXml } from '../../../cli/remote-run/junit.ts';
import type { RunView } from '../../../schemas/wire/relay.ts';

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
function job(name: string, status: string, reason: string | null = null, kind = 'job'): RunView['jobs'][number] {
  return { jobId: `${name}-id`, name, displayName: name, kind, status, reason, agentId: null, needs: [], runsOn: [], attempts: 1, queuedAt: at(0), startedAt: at(1), finishedAt: at(3), steps: [] };
}
const run = (jobs: RunView['jobs'], status: string): RunView => ({
  runId: 'r1', orgId: 'acme', status, reason: null, workflow: 'ci', repository: 'acme/app', workflowRepository: 'acme/app', workflowSha: 'a'.repeat(40), sha: 'a'.repeat(40),
  ref: 'refs/heads/main', eventName: 'push', actor: 'alice', trustTier: 'trusted', deliveryId: null, parentRunId: null, originalRunId: null, triggeredBy: 'alice', cancelledBy: null,
  createdAt: at(0), startedAt: at(1), finishedAt: at(4), durationMs: 3000, jobs,
});

t.test('suites, cases, failures and escaping', async (t) => {
  const xml = junitXml([
    { fixture: 'ci <push> & "more"', workflow: 'ci', runId: 'r1', run: run([job('lint', 'completed'), job('test', 'failed', 'step "unit" failed: expected <1> got \u0007 2'), job('svc:build', 'completed', null, 'build'), job('deploy', 'skipped', 'rule said no')], 'failed') },
    { fixture: 'nightly', workflow: '(none)', runId: '', run: null, error: 'no workflow matches the fixture\'s event' },
  ]);
  t.equal(XMLValidator.validate(xml), true, 'well-formed');
  const doc = new XMLParser({ ignoreAttributes: false, isArray: (n) => ['testsuite', 'testcase'].includes(n) }).parse(xml) as {
    testsuites: { '@_tests': string; '@_failures': string; testsuite: Array<{ '@_name': string; '@_failures': string; '@_skipped': string; testcase: Array<{ '@_name': string; failure?: { '@_message': string }; skipped?: unknown }> }> };
  };
  const [first, second] = doc.testsuites.testsuite;
  t.equal(first!['@_name'], 'ci <push> & "more" › ci');
  t.same(first!.testcase.map((c) => c['@_name']), ['lint', 'test', 'deploy'], 'jobs only, not the build');
  t.equal(first!['@_failures'], '1');
  t.equal(first!['@_skipped'], '1');
  t.equal(first!.testcase[1]!.failure!['@_message'], 'step "unit" failed: expected <1> got  2', 'escaped, control character dropped');
  t.equal(second!['@_failures'], '1', 'a run never created is a failure');
  t.equal(doc.testsuites['@_tests'], '4');
  t.equal(doc.testsuites['@_failures'], '2');
});
