// The servers' garbage-collection settings (bin/launch.ts, tuneServerHeap; issue 19): under the
// same allocation, a process with them keeps its young generation near the cap while one with
// V8's defaults lets it grow past it. Real child processes of the test's Node.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const run = promisify(execFile);
const probe = fileURLToPath(new URL('../fixtures/heap/young-probe.mjs', import.meta.url));
const launcher = new URL(process.env['SVC_TEST_DIST'] ? '../../dist/bin/launch.js' : '../../bin/launch.ts', import.meta.url).href;

async function maxYoung(...args: string[]): Promise<number> {
  const { stdout } = await run(process.execPath, [probe, ...args], { timeout: 60_000 });
  return (JSON.parse(stdout.trim()) as { maxYoungMiB: number }).maxYoungMiB;
}

t.test('the young generation stays near its cap under steady allocation; V8 alone grows it past', async (t) => {
  const [defaults, tuned] = await Promise.all([maxYoung(), maxYoung('tuned', launcher)]);
  t.ok(defaults > 64, `V8's defaults grew it to ${defaults} MiB (the probe allocates enough to show the difference)`);
  // The cap is 16 MiB; growth is switched off between checks every 250 ms, so one doubling may
  // land before a check, two under a loaded machine.
  t.ok(tuned <= 64, `with the servers' settings it stayed at ${tuned} MiB`);
  t.ok(tuned < defaults);
});
