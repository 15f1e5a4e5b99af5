// The spare runner's type-stripper warm-up: its sample is TypeScript the stripper accepts (a
// refused sample would warm nothing, silently), and it leaves no "experimental" warning for the
// first job's log.
import { stripTypeScriptTypes } from 'node:module';
import t from 'tap';
import { TYPESCRIPT_SAMPLE, warmTypeStripper } from '../../../agent/runner/runner.ts';

t.test('the sample strips; the warm-up emits no warning', async (t) => {
  const warnings: string[] = [];
  const listener = (warning: Error) => warnings.push(warning.message);
  process.on('warning', listener);
  t.teardown(() => void process.off('warning', listener));
  warmTypeStripper();
  await new Promise((resolve) => setImmediate(resolve));
  t.same(warnings, [], 'no warning reached the process');
  const stripped = stripTypeScriptTypes(TYPESCRIPT_SAMPLE);
  t.notMatch(stripped, /interface Options|: number|as const/, 'types are gone');
  t.match(stripped, /export default job\(/, 'code is kept');
  t.equal(typeof process.emitWarning, 'function', 'process.emitWarning is put back');
});
