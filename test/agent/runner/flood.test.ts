// A command that prints far faster than the agent reads: every line and then the result reach
// the agent, in order, and the runner's queue stays bounded (the command waits for the reader).
// Before the bound, the runner queued every line in memory and exited 5 s after the job ended,
// dropping the lines still queued and the result with them ("the step runner ended (exit code
// 0) before reporting a result", bench/big-log.ts at 100,000 lines).
import t from 'tap';
import { runRunner } from '../../fixtures/run-runner.ts';
import { volume } from '../../fixtures/volume.ts';

// 30,000 lines in `npm test` (15 times the runner's bound of about 2,000 unread messages),
// 100,000 in test:full; the reader stalls 50 times for 120 ms either way (6 s in all).
const LINES = volume(30_000, 100_000);
const STALL_EVERY = LINES / 50;
const STALL = new Int32Array(new SharedArrayBuffer(4));

for (const [jobName, how] of [['flood', 'a command (ctx.$)'], ['flood-write', 'process.stdout.write with drain']] as const) {
  t.test(`${LINES.toLocaleString('en')} lines from ${how} to a slow reader: all of them, in order, then the result`, async (t) => {
    let logs = 0;
    const run = await runRunner({
      file: 'flood.ts',
      workflowName: 'flood',
      jobName,
      start: { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', FLOOD_LINES: String(LINES) } },
      timeoutMs: 240_000,
      onMessage: (message) => {
        if (message.type !== 'runner.log' || message.step !== 'print') return;
        logs++;
        // The reader falls behind: 120 ms of blocked event loop 50 times (6 s in all),
        // longer than the runner's old fixed 5 s between the job's end and its exit. Blocked by
        // Atomics.wait, not a spin: the same stalled agent without burning a core the suite shares.
        if (logs % STALL_EVERY === 0) Atomics.wait(STALL, 0, 0, 120);
      },
    });
    t.equal(run.exitCode, 0, 'the runner exits 0');
    t.equal(run.result?.status, 'completed', `the result arrived (${run.stderr.slice(0, 300)})`);
    const lines = run.lines('print', 'stdout');
    t.equal(lines.length, LINES, 'every line arrived');
    t.equal(lines[0], '1');
    t.equal(lines.at(-1), String(LINES));
    t.ok(lines.every((line, i) => line === String(i + 1)), 'in order, none repeated');
    const last = run.messages.findLastIndex((m) => m.type === 'runner.log');
    t.ok(run.messages.findIndex((m) => m.type === 'runner.result') > last, 'the result comes after the last line');
    t.same(run.invalid, [], 'every message passed the wire schema');
  });
}
