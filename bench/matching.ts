// Micro-benchmark of trigger matching: a push that matches nothing against a lock of 100
// workflows × 3 triggers (the orchestrator's common case: most deliveries run few workflows).
// Figures only, no assertions. Run: node bench/matching.ts [iterations]
import { matchLock, workflowsNeedChangedFiles } from '../workflow/matching/match-lock.ts';
import { normalizeGithubPayload } from '../plugins/providers/shared/github-payload.ts';
import type { Lock } from '../schemas/lock.ts';
import { pushPayload } from '../test/fixtures/github-payloads.ts';
import { lockOf, trig, workflow } from '../test/fixtures/locks.ts';

const iterations = Number(process.argv[2] ?? 20_000);

function buildLock(): Lock {
  return lockOf(
    Array.from({ length: 100 }, (_, i) =>
      workflow(`wf-${i}`, [
        trig.push({ branches: ['main', `release/${i}.*`, '!release/old'], paths: [`services/s${i}/**`, 'shared/**', '!**/*.md'] }),
        trig.pr({ branches: ['main'], paths: [`services/s${i}/**`] }),
        trig.tag({ tags: [`s${i}-v*`] }),
      ]),
    ),
  );
}

const event = normalizeGithubPayload('github', 'push', pushPayload({ ref: 'refs/heads/feature/x', files: { modified: ['services/s7/a.ts', 'README.md'] } }));

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Times `run` alone; `setup` (untimed) prepares its argument. events/s counts matching time only. */
function measure<A>(label: string, n: number, run: (arg: A) => void, setup: () => A = () => undefined as A): void {
  for (let i = 0; i < Math.min(1000, n); i++) run(setup());
  const samples = new Array<number>(n);
  let total = 0;
  for (let i = 0; i < n; i++) {
    const arg = setup();
    const t0 = process.hrtime.bigint();
    run(arg);
    samples[i] = Number(process.hrtime.bigint() - t0) / 1000;
    total += samples[i]!;
  }
  const totalSeconds = total / 1e6;
  samples.sort((a, b) => a - b);
  const fmt = (us: number) => `${us.toFixed(1)} µs`;
  process.stdout.write(
    `${label.padEnd(46)} median ${fmt(percentile(samples, 50)).padStart(10)}  p99 ${fmt(percentile(samples, 99)).padStart(10)}  ${Math.round(n / totalSeconds).toLocaleString('en-US').padStart(9)} events/s\n`,
  );
}

const lock = buildLock();
let sink = 0;
process.stdout.write(`trigger matching: 100 workflows × 3 triggers, no-match push, ${iterations} iterations (Node ${process.version})\n`);
measure('matchLock (same lock object, compiled once)', iterations, () => {
  sink += matchLock(event, lock).unmatched.length;
});
const withoutFiles = { ...event, changedFiles: null };
measure('workflowsNeedChangedFiles (event w/o files)', iterations, () => {
  sink += workflowsNeedChangedFiles(lock, withoutFiles).length;
});
// A fresh lock object every time (an orchestrator that caches lock text, not objects): the
// per-lock compile runs each time, the pattern matchers come from the text cache.
const text = JSON.stringify(lock);
measure('matchLock (fresh lock object each time)', Math.min(iterations, 5000), (fresh: Lock) => {
  sink += matchLock(event, fresh).unmatched.length;
}, () => JSON.parse(text) as Lock);
if (sink < 0) process.stdout.write('unreachable\n');
