// Subsystem wiring by typed references: start order from the graph (declaration order for
// ties), refusals naming the missing ref and who needs it, the ref provided twice, the cycle with
// its path; typed deps; stop in reverse order, also after a failed start.
import t from 'tap';
import { createServiceRef, orderSubsystems, provide, startSubsystems, type Subsystem } from '../../../core/wiring/index.ts';

interface Log {
  events: string[];
}

const a = createServiceRef<{ hello(): string }>('a-service');
const b = createServiceRef<number>('b-service');
const c = createServiceRef<string>('c-service');

/** A subsystem that records its start and stop in `log.events`. */
function unit(id: string, spec: Partial<Pick<Subsystem<Log>, 'provides' | 'needs' | 'optionalNeeds'>> = {}, start?: Subsystem<Log>['start']): Subsystem<Log> {
  return {
    id,
    ...spec,
    async start(log, deps) {
      log.events.push(`start ${id}`);
      deps.onStop(() => void log.events.push(`stop ${id}`));
      return start?.(log, deps);
    },
  };
}

const ids = (list: readonly { id: string }[]) => list.map((s) => s.id);

t.test('order comes from the graph; ties keep declaration order', async (t) => {
  const list = [unit('late', { needs: [b] }), unit('first'), unit('provider-b', { provides: [b], needs: [a] }), unit('provider-a', { provides: [a] }), unit('second')];
  t.same(ids(orderSubsystems(list)), ['first', 'provider-a', 'provider-b', 'late', 'second']);
  t.same(ids(orderSubsystems([unit('x'), unit('y'), unit('z')])), ['x', 'y', 'z'], 'no edges: declaration order');
  t.same(ids(orderSubsystems([])), []);
});

t.test('an optional need orders when provided and is ignored when not', async (t) => {
  t.same(ids(orderSubsystems([unit('user', { optionalNeeds: [a] }), unit('provider', { provides: [a] })])), ['provider', 'user']);
  t.same(ids(orderSubsystems([unit('user', { optionalNeeds: [a] })])), ['user']);
});

t.test('a need nobody provides is refused, naming the ref and who needs it', async (t) => {
  const storage = createServiceRef<unknown>('storage-urls');
  t.throws(() => orderSubsystems([unit('dispatch', { provides: [a] }), unit('caches', { needs: [a, storage] })]), {
    code: 'SVC_ERR_WIRING_NEED_MISSING',
    message: "subsystem 'caches' needs 'storage-urls', which no subsystem provides",
  });
});

t.test('a ref provided twice and a duplicate subsystem id are refused, naming both', async (t) => {
  t.throws(() => orderSubsystems([unit('one', { provides: [a] }), unit('two', { provides: [b, a] })]), {
    code: 'SVC_ERR_WIRING_PROVIDED_TWICE',
    message: /'a-service' is provided by both subsystem 'one' and subsystem 'two'/,
  });
  t.throws(() => orderSubsystems([unit('same'), unit('other'), unit('same')]), { code: 'SVC_ERR_WIRING_SUBSYSTEM_DUPLICATE', message: /'same'/ });
});

t.test('a cycle is refused with its path, also when reached through a subsystem outside it', async (t) => {
  const two = [unit('alpha', { provides: [a], needs: [b] }), unit('beta', { provides: [b], needs: [a] })];
  t.throws(() => orderSubsystems(two), { code: 'SVC_ERR_WIRING_CYCLE', message: /^dependency cycle: alpha → beta → alpha \('alpha' needs 'b-service' from 'beta'; 'beta' needs 'a-service' from 'alpha'\)$/ });
  const three = [unit('outside', { needs: [a] }), unit('p', { provides: [a], needs: [b] }), unit('q', { provides: [b], needs: [c] }), unit('r', { provides: [c], optionalNeeds: [a] })];
  t.throws(() => orderSubsystems(three), { code: 'SVC_ERR_WIRING_CYCLE', message: /^dependency cycle: p → q → r → p / }, 'an optional need that is provided closes a cycle too');
  t.throws(() => orderSubsystems([unit('self', { provides: [a], needs: [a] })]), { code: 'SVC_ERR_WIRING_CYCLE', message: /^dependency cycle: self → self / });
});

t.test('services pass through typed deps; the started set hands them out; stop runs in reverse', async (t) => {
  const log: Log = { events: [] };
  const started = await startSubsystems(
    [
      unit('consumer', { needs: [a], optionalNeeds: [b, c] }, async (log, deps) => {
        log.events.push(`consumer got ${deps.get(a).hello()} ${deps.getOptional(b)} ${deps.getOptional(c)}`);
      }),
      unit('provider', { provides: [a, b] }, async () => [provide(a, { hello: () => 'hi' }), provide(b, 42)]),
    ],
    log,
  );
  t.same(started.order, ['provider', 'consumer']);
  t.same(log.events, ['start provider', 'start consumer', 'consumer got hi 42 undefined']);
  t.equal(started.get(b), 42);
  t.equal(started.has(c), false);
  t.throws(() => started.get(c), { code: 'SVC_ERR_WIRING_NOT_STARTED', message: "no started subsystem provides 'c-service'" });
  await started.stop();
  await started.stop();
  t.same(log.events.slice(3), ['stop consumer', 'stop provider'], 'reverse start order, once');
});

t.test('stop steps of one subsystem run in reverse, and a failing step does not stop the others', async (t) => {
  const log: Log = { events: [] };
  const started = await startSubsystems(
    [
      unit('first'),
      {
        id: 'second',
        async start(log, deps) {
          deps.onStop(() => void log.events.push('second: registered first'));
          deps.onStop(() => {
            throw new Error('boom');
          });
          deps.onStop(() => void log.events.push('second: registered last'));
        },
      },
    ],
    log,
  );
  await started.stop();
  t.same(log.events, ['start first', 'second: registered last', 'second: registered first', 'stop first']);
});

t.test('a failed start stops what started, its own registered steps included, and rethrows', async (t) => {
  const log: Log = { events: [] };
  const list = [
    unit('ok'),
    unit('breaks', {}, async () => {
      throw new Error('cannot start');
    }),
    unit('never'),
  ];
  await t.rejects(startSubsystems(list, log), { message: 'cannot start' });
  t.same(log.events, ['start ok', 'start breaks', 'stop breaks', 'stop ok']);
});

t.test('a subsystem must return what it declares, only that, and ask only for what it declared', async (t) => {
  await t.rejects(startSubsystems([unit('lazy', { provides: [a] })], { events: [] }), {
    code: 'SVC_ERR_WIRING_NOT_PROVIDED',
    message: "subsystem 'lazy' declares it provides 'a-service' but its start did not return it",
  });
  await t.rejects(startSubsystems([unit('extra', {}, async () => [provide(b, 1)])], { events: [] }), { code: 'SVC_ERR_WIRING_UNDECLARED_PROVISION', message: /'extra' returned 'b-service'/ });
  const sneaky = [unit('provider', { provides: [a] }, async () => [provide(a, { hello: () => 'x' })]), unit('sneaky', {}, async (_log, deps) => void deps.get(a))];
  await t.rejects(startSubsystems(sneaky, { events: [] }), { code: 'SVC_ERR_WIRING_UNDECLARED_NEED', message: /'sneaky' asked for 'a-service'/ });
  t.throws(() => createServiceRef('Not Kebab'), TypeError);
});
