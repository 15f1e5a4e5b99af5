import { createHash } from 'node:crypto';
import t from 'tap';
import { buildLock, computeLockContentHash, minReaderVersionFor, parseLock, serializeLock } from '../../../workflow/lock/lock-file.ts';
import { workflowToLockEntry } from '../../../workflow/compile/lock-entry.ts';
import { LOCK_SCHEMA_VERSION } from '../../../schemas/lock.ts';
import { job, pr, push, schedule, step, workflow } from '../../../sdk/index.ts';

const HASH = 'b'.repeat(64);
const noop = async (): Promise<void> => {};
const entry = (def: unknown, file = 'ci') => workflowToLockEntry(def, { sourcePath: `.svc/workflows/${file}.ts`, exportName: 'default', contentHash: HASH });

// The same workflow declared in two different orders (keys, triggers, jobs, sets).
const first = () =>
  workflow('ci', {
    description: 'd',
    on: [push({ branches: ['main'] }), schedule('0 1 * * *'), pr({ actions: ['opened', 'closed'] })],
    contexts: ['b', 'a'],
    jobs: {
      build: job({ runsOn: ['linux', 'x64'], steps: [step('one', noop), step('two', noop)] }),
      test: job({ needs: ['build'], runsOn: 'linux', steps: [] }),
    },
  });
const second = () =>
  workflow('ci', {
    jobs: {
      test: job({ steps: [], runsOn: 'linux', needs: ['build'] }),
      build: job({ steps: [step('one', noop), step('two', noop)], runsOn: ['x64', 'linux'] }),
    },
    contexts: ['a', 'b'],
    on: [pr({ actions: ['closed', 'opened'] }), schedule('0  1 * * *'), push({ branches: ['main'] })],
    description: 'd',
  });

t.test('serialization is deterministic and independent of definition order', async (t) => {
  const other = workflow('aaa', { on: push(), jobs: {} });
  const a = buildLock({ source: '.svc/workflows/*.ts#default', workflows: [entry(first()), entry(other, 'aaa')] });
  const b = buildLock({ source: '.svc/workflows/*.ts#default', workflows: [entry(other, 'aaa'), entry(second())] });
  const textA = serializeLock(a);
  const textB = serializeLock(b);
  t.equal(textA, textB, 'byte-identical');
  t.equal(serializeLock(a), textA, 'stable across calls');
  t.ok(textA.endsWith('}\n'), 'trailing newline');
  t.match(textA, /^\{\n  "contentHash": /, '2-space indent, keys sorted');
  t.same(a.workflows.map((w) => w.name), ['aaa', 'ci'], 'workflows sorted by name');
  const parsed = JSON.parse(textA) as Record<string, unknown>;
  t.same(Object.keys(parsed), [...Object.keys(parsed)].sort());
  const job0 = (parsed['workflows'] as { jobs: Record<string, unknown>[] }[])[1]!.jobs[0]!;
  t.same(Object.keys(job0), [...Object.keys(job0)].sort(), 'nested keys sorted');
  t.same((parsed['workflows'] as { jobs: { steps: { name: string }[] }[] }[])[1]!.jobs[0]!.steps.map((s) => s.name), ['one', 'two'], 'step order kept');
});

t.test('contentHash is SHA-256 of the serialization without contentHash', async (t) => {
  const lock = buildLock({ source: 's#default', workflows: [entry(first())], lockfileHash: `npm:${'c'.repeat(64)}`, siblingsDigest: 'd'.repeat(64) });
  const { contentHash, ...rest } = lock;
  const expected = createHash('sha256').update(serializeLock(rest)).digest('hex');
  t.equal(contentHash, expected);
  t.equal(computeLockContentHash(lock), expected, 'the field itself is ignored');
  t.equal(lock.schemaVersion, LOCK_SCHEMA_VERSION);
  t.equal(lock.minReaderVersion, 38);
  t.equal(lock.lockfileHash, `npm:${'c'.repeat(64)}`);
  const changed = { ...rest, source: 'other#default' };
  t.not(computeLockContentHash(changed), expected, 'any content change moves the hash');
});

t.test('minReaderVersion is 42 only for organization-wide workflows with approval', async (t) => {
  const orgApproval = entry(workflow('org', { on: push({ repositories: ['acme/*'] }), approval: { clauses: [{ users: ['a'] }] }, jobs: {} }));
  const orgStepApproval = entry(
    workflow('org2', {
      on: push({ repositories: ['acme/*'] }),
      jobs: { a: job({ runsOn: 'x', steps: [step('s', noop, { approval: { clauses: [{ teams: ['t'] }] } })] }) },
    }),
  );
  const orgNoApproval = entry(workflow('org3', { on: push({ repositories: ['acme/*'] }), jobs: {} }));
  const localApproval = entry(workflow('local', { on: push(), approval: { clauses: [{ users: ['a'] }] }, jobs: {} }));
  t.equal(minReaderVersionFor([orgApproval]), 42);
  t.equal(minReaderVersionFor([orgStepApproval]), 42);
  t.equal(minReaderVersionFor([orgNoApproval, localApproval]), 38);
  t.equal(minReaderVersionFor([]), 38);
  t.equal(buildLock({ source: 's#default', workflows: [localApproval, orgApproval] }).minReaderVersion, 42);
});

t.test('duplicate workflow names across files are refused', async (t) => {
  t.throws(() => buildLock({ source: 's', workflows: [entry(first(), 'a'), entry(second(), 'b')] }), {
    code: 'SVC_ERR_COMPILE_DUPLICATE_WORKFLOW',
    message: /\.svc\/workflows\/a\.ts#default and \.svc\/workflows\/b\.ts#default/,
  });
  t.throws(() => buildLock({ source: 's', workflows: [entry(first())], lockfileHash: 'bogus' }), { code: 'SVC_ERR_COMPILE_LOCK_INVALID' });
});

t.test('parseLock reads back what was written and refuses tampering', async (t) => {
  const lock = buildLock({ source: 's#default', workflows: [entry(first())] });
  const text = serializeLock(lock);
  t.same(parseLock(text), lock);
  t.throws(() => parseLock('{'), { code: 'SVC_ERR_LOCK_INVALID' });
  t.throws(() => parseLock('{"schemaVersion": 42}'), { code: 'SVC_ERR_LOCK_INVALID', message: /contentHash: is required/ });
  const tampered = text.replace('"name": "build"', '"name": "build2"');
  t.throws(() => parseLock(tampered), { code: 'SVC_ERR_LOCK_HASH_MISMATCH' });
  const extra = JSON.parse(text) as Record<string, unknown>;
  extra['futureField'] = 1;
  const { contentHash: _c, ...body } = extra;
  const reHashed = { ...body, contentHash: computeLockContentHash(body as never) };
  t.equal((parseLock(JSON.stringify(reHashed)) as Record<string, unknown>)['futureField'], 1, 'additive fields from a newer compiler are read past');
});
