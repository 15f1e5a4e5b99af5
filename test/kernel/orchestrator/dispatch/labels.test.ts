import t from 'tap';
import { effectiveLabels, satisfies } from '../../../../kernel/orchestrator/dispatch/labels.ts';
import { noJobsReason } from '../../../../kernel/orchestrator/dispatch/queue.ts';

const facts = { os: 'Linux', arch: 'x64', ephemeral: false, sandboxes: ['container', 'bare-metal'], labels: ['gpu', 'team-a'] };

t.test('auto labels come first, then custom ones', async (t) => {
  t.same(effectiveLabels(facts), ['svc:os:linux', 'svc:arch:x64', 'svc:role:static', 'svc:sandbox:container', 'svc:sandbox:bare-metal', 'gpu', 'team-a']);
  t.same(effectiveLabels({ ...facts, ephemeral: true, sandboxes: [], labels: [] }), ['svc:os:linux', 'svc:arch:x64', 'svc:role:ephemeral']);
});

t.test('agents cannot claim auto labels or send malformed ones', async (t) => {
  t.throws(() => effectiveLabels({ ...facts, labels: ['svc:os:windows'] }), { code: 'SVC_ERR_DISPATCH_LABEL_RESERVED' });
  for (const bad of ['has space', 'star*', '!neg', '']) {
    t.throws(() => effectiveLabels({ ...facts, labels: [bad] }), { code: 'SVC_ERR_DISPATCH_LABEL_INVALID' }, bad);
  }
});

t.test('matchers: exact, negation, prefix', async (t) => {
  const labels = effectiveLabels(facts);
  t.ok(satisfies([], labels), 'no matchers: any agent');
  t.ok(satisfies(['gpu'], labels));
  t.notOk(satisfies(['tpu'], labels));
  t.ok(satisfies(['gpu', 'svc:os:linux'], labels), 'all must hold');
  t.notOk(satisfies(['gpu', 'svc:os:darwin'], labels));
  t.ok(satisfies(['!windows'], labels));
  t.notOk(satisfies(['!gpu'], labels));
  t.ok(satisfies(['team-*'], labels));
  t.ok(satisfies(['svc:sandbox:*'], labels));
  t.notOk(satisfies(['team-b*'], labels));
  t.notOk(satisfies(['!team-*'], labels));
  t.ok(satisfies(['!svc:role:ephemeral'], labels));
  t.notOk(satisfies(['gpu-*'], labels), 'prefix is a prefix, not a glob of the whole label');
  t.notOk(satisfies(['ubuntu-latest'], labels), 'a label from another CI system matches nothing');
});

t.test('the No jobs dispatched reason names the labels', async (t) => {
  t.equal(noJobsReason(['gpu', '!windows']), 'No jobs dispatched: no online or spawnable agent carries the labels gpu, !windows');
});
