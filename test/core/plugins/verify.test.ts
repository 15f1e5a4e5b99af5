// `verifyPluginModule`: the sign-in phases as a report, without a server.
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { SIGN_IN_PHASES } from '../../../core/plugins/errors.ts';
import { verifyPluginModule } from '../../../core/plugins/verify.ts';

const fixtures = fileURLToPath(new URL('../../fixtures/plugins/', import.meta.url));
const statuses = (report: Awaited<ReturnType<typeof verifyPluginModule>>) => Object.fromEntries(report.phases.map((p) => [p.phase, p.status]));

t.test('a good module passes every phase', async (t) => {
  const report = await verifyPluginModule('./good-storage.ts', { baseDir: fixtures, config: { 'storage:fixture-memory': { label: 'x' } } });
  t.equal(report.ok, true);
  t.equal(report.modulePath, `${fixtures}good-storage.ts`);
  t.same(report.plugin, { id: 'fixture-memory', kind: 'storage', version: '2.0.0', description: 'Fixture in-memory storage' });
  t.same(report.phases.map((p) => p.phase), [...SIGN_IN_PHASES]);
  t.same(statuses(report), {
    resolve: 'passed',
    export: 'passed',
    manifest: 'passed',
    unique: 'passed',
    'kernel-range': 'passed',
    dependencies: 'skipped',
    config: 'passed',
    create: 'passed',
    shape: 'passed',
  });
  t.equal(report.error, undefined);
});

t.test('a failing module reports the failed phase and what did not run', async (t) => {
  const report = await verifyPluginModule('./needs-root.ts', { baseDir: fixtures });
  t.equal(report.ok, false);
  t.same(report.error, {
    code: 'SVC_ERR_PLUGIN_SIGN_IN',
    phase: 'config',
    message: 'plugin "fs-x" (storage) failed sign-in at phase "config": root: is required',
  });
  t.same(statuses(report), {
    resolve: 'passed',
    export: 'passed',
    manifest: 'passed',
    unique: 'passed',
    'kernel-range': 'passed',
    dependencies: 'skipped',
    config: 'failed',
    create: 'not-run',
    shape: 'not-run',
  });
  t.equal(report.phases.find((p) => p.phase === 'config')?.message, 'root: is required');
});

t.test('dependencies are reported, not checked', async (t) => {
  const report = await verifyPluginModule(`${fixtures}needs-storage.ts`, { createTimeoutMs: 500 });
  // create asks for its storage dependency, which a lone verification does not have.
  t.equal(report.ok, false);
  t.equal(report.phases.find((p) => p.phase === 'dependencies')?.message, 'checked at start: needs storage:fixture-memory');
  t.equal(report.error?.phase, 'create');
});

t.test('a missing module fails at resolve', async (t) => {
  const report = await verifyPluginModule('./missing.ts', { baseDir: fixtures });
  t.equal(report.ok, false);
  t.equal(report.error?.phase, 'resolve');
  t.equal(statuses(report)['export'], 'not-run');
});
