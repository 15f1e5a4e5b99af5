import t from 'tap';
import { buildRegistrationIndex, matchRegistrations, type Registration } from '../../../workflow/matching/registrations.ts';
import { InputError } from '../../../core/errors.ts';
import { pushPayload } from '../../fixtures/github-payloads.ts';
import { trig } from '../../fixtures/locks.ts';
import { genericEvent, svcEvent } from '../../fixtures/more-payloads.ts';
import { gh } from './helpers.ts';

const reg = (id: string, trigger: Registration['trigger'], extra: Partial<Registration> = {}): Registration => ({
  id,
  orgId: 'org-1',
  repository: 'acme/ops',
  workflow: `wf-${id}`,
  trigger,
  ...extra,
});

const registrations: Registration[] = [
  reg('deploy', trig.webhook({ events: ['deploy', 'promote'] })),
  reg('deploy-other-org', trig.webhook({ events: ['deploy'] }), { orgId: 'org-2' }),
  reg('artifact', trig.event({ name: 'artifact.ready' })),
  reg('notify', trig.workflow_complete({ statuses: ['failed'] })),
  reg('lifecycle', trig.lifecycle()),
  reg('audit', trig.push({ repositories: ['acme/*'] }), { repository: 'acme/audit' }),
  reg('audit-self', trig.push({ repositories: ['acme/*'] }), { repository: 'acme/app' }),
  reg('plain-push', trig.push(), { repository: 'acme/app' }),
  reg('nightly', trig.schedule()),
];

t.test('candidates by org and event name, by org and type, and global workflows', async (t) => {
  const index = buildRegistrationIndex(registrations);
  t.equal(index.size, registrations.length);
  const ids = (list: Registration[]) => list.map((r) => r.id);
  t.same(ids(index.candidatesFor(genericEvent('deploy'), 'org-1')), ['deploy']);
  t.same(ids(index.candidatesFor(genericEvent('promote'), 'org-1')), ['deploy']);
  t.same(ids(index.candidatesFor(genericEvent('deploy'), 'org-2')), ['deploy-other-org'], 'orgs never share registrations');
  t.same(ids(index.candidatesFor(genericEvent('deploy'), 'org-3')), []);
  t.same(ids(index.candidatesFor(svcEvent('event', 'artifact.ready'), 'org-1')), ['artifact']);
  t.same(ids(index.candidatesFor(svcEvent('workflow_complete', 'workflow_complete'), 'org-1')), ['notify']);
  t.same(ids(index.candidatesFor(svcEvent('lifecycle', 'registration.updated'), 'org-1')), ['lifecycle']);
  // A push from acme/app: global workflows of other repositories only; the plain push trigger
  // and acme/app's own global workflow come from acme/app's lock.
  t.same(ids(index.candidatesFor(gh('push', pushPayload()), 'org-1')), ['audit']);
  t.same(ids(index.candidatesFor(gh('push', pushPayload({ ref: 'refs/tags/v1' })), 'org-1')), [], 'tag events: no global tag workflow');
  t.same(ids(index.candidatesFor({ ...gh('push', pushPayload()), type: null }, 'org-1')), []);
  t.same(ids(index.candidatesFor({ ...svcEvent('event', 'x'), customEventName: null }, 'org-1')), []);
  // The caller may mutate what it gets back without touching the index.
  index.candidatesFor(genericEvent('deploy'), 'org-1').pop();
  t.same(ids(index.candidatesFor(genericEvent('deploy'), 'org-1')), ['deploy']);
});

t.test('matchRegistrations evaluates each candidate with its own repository', async (t) => {
  const index = buildRegistrationIndex(registrations);
  const hook = matchRegistrations(index, genericEvent('deploy'), 'org-1');
  t.same(hook.matched.map((m) => m.registration.id), ['deploy']);

  const allow = { workflowRepositoryAllowed: () => true, sourceRepositoryAllowed: () => true };
  const fromApp = gh('push', pushPayload());
  const global = matchRegistrations(index, fromApp, 'org-1', { orgWidePolicy: allow });
  t.same(global.matched.map((m) => [m.registration.id, m.orgWide]), [['audit', true]]);
  const denied = matchRegistrations(index, fromApp, 'org-1', { orgWidePolicy: { ...allow, workflowRepositoryAllowed: (r) => r !== 'acme/audit' } });
  t.same(denied.unmatched.map((u) => [u.registration.id, u.verdict]), [['audit', 'no_match']]);
  t.match(denied.unmatched[0]?.reasons.find((v) => v.filter === 'repositories')?.detail, /workflow repository "acme\/audit"/);

  const done = matchRegistrations(index, svcEvent('workflow_complete', 'workflow_complete'), 'org-1', { internal: { workflow: 'ci', status: 'success' } });
  t.same(done.unmatched.map((u) => u.registration.id), ['notify']);
  const unknown = matchRegistrations(index, svcEvent('workflow_complete', 'workflow_complete'), 'org-1');
  t.equal(unknown.unmatched[0]?.verdict, 'indeterminate');
});

t.test('bad registrations are refused whole, naming the entry', async (t) => {
  const bad: [unknown, RegExp][] = [
    [[reg('a', trig.push()), reg('a', trig.pr())], /registration 1: duplicate registration id "a"/],
    [[{ ...reg('a', trig.push()), orgId: '' }], /registration 0: orgId must be a non-empty string/],
    [[{ ...reg('a', trig.push()), repository: 'noslash' }], /must be owner\/repo/],
    [[{ ...reg('a', trig.push()), triggerIndex: -1 }], /triggerIndex must be a non-negative integer/],
    [[{ ...reg('a', trig.push()), trigger: { type: 'teleport' } }], /trigger is not a lock trigger: type: unknown message type "teleport"/],
    [[{ ...reg('a', trig.push()), trigger: { type: 'webhook', events: [] } }], /trigger is not a lock trigger: events/],
    [[{ ...reg('a', trig.push()), trigger: null }], /trigger is not a lock trigger/],
  ];
  for (const [input, message] of bad) {
    let caught: unknown;
    try {
      buildRegistrationIndex(input as Registration[]);
    } catch (error) {
      caught = error;
    }
    t.ok(caught instanceof InputError, `refused: ${message}`);
    t.equal((caught as InputError).code, 'SVC_ERR_MATCHING_INVALID_REGISTRATION');
    t.match((caught as Error).message, message);
  }
  t.equal(buildRegistrationIndex([]).size, 0);
});

t.test('registrations carry their own extra fields through', async (t) => {
  type Stored = Registration & { lockSha: string };
  const index = buildRegistrationIndex<Stored>([{ ...reg('x', trig.webhook({ events: ['go'] })), lockSha: 'abc' }]);
  const [hit] = matchRegistrations(index, genericEvent('go'), 'org-1').matched;
  t.equal(hit?.registration.lockSha, 'abc');
});
