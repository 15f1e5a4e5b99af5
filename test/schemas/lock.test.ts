import t from 'tap';
import {
  BREAKING_LOCK_VERSIONS,
  checkLockAcceptance,
  COMPILE_SCHEMA_VERSION,
  LOCK_SCHEMA_VERSION,
  LockTrigger,
  LockTriggerMembers,
  OLDEST_SUPPORTED_LOCK_SCHEMA,
} from '../../schemas/lock.ts';
import { compileMessageUnion } from '../../schemas/validate.ts';

t.test('versions', async (t) => {
  t.equal(LOCK_SCHEMA_VERSION, 43);
  t.equal(COMPILE_SCHEMA_VERSION, 7);
  t.equal(OLDEST_SUPPORTED_LOCK_SCHEMA, 38);
  t.same(BREAKING_LOCK_VERSIONS, [38, 42, 43]);
  t.ok(LockTrigger);
});

t.test('lock acceptance window', async (t) => {
  t.same(checkLockAcceptance({ schemaVersion: 42, minReaderVersion: 38 }), { accepted: true });
  t.same(checkLockAcceptance({ schemaVersion: 38, minReaderVersion: 38 }), { accepted: true }, 'oldest supported');
  t.same(checkLockAcceptance({ schemaVersion: 42, minReaderVersion: 38 }, 41), { accepted: true }, 'additive bump read by an older orchestrator');
  t.same(checkLockAcceptance({ schemaVersion: 45, minReaderVersion: 42 }), { accepted: true }, 'newer additive lock');
  t.same(checkLockAcceptance({ schemaVersion: 40 }), { accepted: true }, 'no minReaderVersion: read by a reader at least as new');

  const old = checkLockAcceptance({ schemaVersion: 37, minReaderVersion: 30 });
  t.equal(old.accepted, false);
  t.match(old, { reason: 'lock_too_old', message: /schema 37 .*oldest supported schema 38.*Recompile with `svc compile` and push again/ });

  const newer = checkLockAcceptance({ schemaVersion: 42, minReaderVersion: 42 }, 41);
  t.match(newer, { accepted: false, reason: 'reader_too_old', requiredVersion: 42, message: /Upgrade the orchestrator to a version supporting lock schema 42/ });
  t.match(checkLockAcceptance({ schemaVersion: 43 }, 42), { accepted: false, reason: 'reader_too_old', requiredVersion: 43 });

  t.match(checkLockAcceptance({}), { accepted: false, reason: 'invalid' });
  t.match(checkLockAcceptance({ schemaVersion: '42' }), { accepted: false, reason: 'invalid' });
  t.match(checkLockAcceptance({ schemaVersion: 42, minReaderVersion: 1.5 }), { accepted: false, reason: 'invalid' });
  t.match(checkLockAcceptance({ schemaVersion: 40 }, 42, 41), { accepted: false, reason: 'lock_too_old' }, 'custom window');
});

t.test('triggers check as a discriminated union', async (t) => {
  const check = compileMessageUnion([...LockTriggerMembers]);
  t.equal(check.types.length, 22);
  t.ok(check.check({ type: 'schedule', cron: '0 0 * * *', timezone: 'UTC' }));
  t.match(check.validate({ type: 'nope' }), { ok: false, issues: [{ path: 'type' }] });
  t.match(check.validate({ type: 'schedule', timezone: 'UTC' }), { ok: false, issues: [{ path: 'cron', message: 'is required' }] });
});
