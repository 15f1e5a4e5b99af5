// `svc/testing` by package name, as an outside plugin package imports it (it resolves to dist/:
// build first). The exported suites catch a broken plugin and pass a good one.
import t from 'tap';
import { assertContract, contractSuites, runContract, SIGN_IN_POINT, tapContract } from 'svc/testing';
import { brokenScaler } from '../../fixtures/plugins/broken/index.ts';
import processScaler from '../../fixtures/plugins/process-scaler.ts';

t.test('the package export carries every suite and the runners', async (t) => {
  t.same(Object.keys(contractSuites).sort(), ['custody', 'generic-source', 'provider', 'sandbox', 'scaler', 'storage']);
  t.type(runContract, 'function');
  t.type(assertContract, 'function');
  t.type(tapContract, 'function');
  t.equal(SIGN_IN_POINT, 'sign-in: passes every kernel sign-in phase');
});

t.test('a plugin built against the sources signs in through the packaged suite', async (t) => {
  const report = await runContract('scaler', processScaler, { config: () => ({ command: [process.execPath, '-e', '0'] }), running: async () => [], settleMs: 1000 }, { only: [SIGN_IN_POINT, 'capacity: non-negative integers with pending <= current <= max and max >= 1'] });
  t.same(report.results.map((r) => r.status), ['passed', 'passed'], JSON.stringify(report.results.map((r) => r.message)));
  const broken = await runContract('scaler', brokenScaler, { running: async () => [], settleMs: 1000 });
  t.match(broken.results.find((r) => r.status === 'failed')?.message, /^scaler "broken-scaler" fails contract point "scale-up: /);
});
