// The custody contract (core/extension-points/contracts/custody.ts) against a custody instance a
// test built itself; test/plugins/contracts.test.ts runs the same suite against every plugin.
import { custodyContract as suite } from '../../../core/extension-points/contracts/index.ts';
import type { CustodyExtensionPoint } from '../../../core/extension-points/custody.ts';
import { tapContract } from '../../../core/testing/tap.ts';
import type { Test } from '../../fixtures/db.ts';
import { instancePlugin } from '../../fixtures/instance-plugin.ts';

export async function custodyContract(t: Test, custody: CustodyExtensionPoint): Promise<void> {
  const subject = instancePlugin('custody', 'custody-under-test');
  // The instance outlives the suite (the caller closes it): the host must not close it per point.
  const shared: CustodyExtensionPoint = { keyId: () => custody.keyId(), getPublicJwk: () => custody.getPublicJwk(), sign: (b, k) => custody.sign(b, k) };
  const report = await tapContract(t, 'custody', subject.plugin, {
    config: () => {
      subject.next(shared);
      return {};
    },
  });
  t.equal(report.results.filter((r) => r.status === 'passed').length, suite.points.length + 1, 'every custody contract point passed');
}
