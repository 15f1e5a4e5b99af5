// Fault: the orchestrator SIGKILLed again and again while 1,000 signed GitHub pushes arrive at
// the relay (real svc-relay and svc-orchestrator, test/fixtures/fault-stack.ts). Every few
// seconds the orchestrator is killed with -9 and started again with the same config. A push the
// relay answered 200 (accepted: the orchestrator committed its record; buffered: the relay
// committed it to its buffer) must end as exactly one delivery record, and a push to main as one
// run per workflow: none lost, none twice. Deliveries cut mid-way (the orchestrator died before
// its ack) fall to the buffer and are replayed; the replay finds the committed record.
import t from 'tap';
import { faultCluster, startFaultStack, tallyLine } from '../fixtures/fault-stack.ts';

t.setTimeout(1_200_000);

const PUSHES = 1_000;

await t.test('orchestrator SIGKILLed repeatedly under 1,000 webhooks: nothing answered 200 is lost or doubled', async (t) => {
  const dbs = await faultCluster(t);
  const stack = await startFaultStack(t, dbs);

  let sending = true;
  let kills = 0;
  let killsWhileSending = 0;
  let restartMsMax = 0;
  let bootKills = 0;
  // `kills` counts every SIGKILL, `bootKills` those that landed before the ready line. Kills go on
  // while pushes arrive, and past the last push (into the drain) until there were three: on a
  // slow machine a restart can outlast the whole stream. Bounded at 30.
  const wanted = () => (sending || kills < 3) && kills < 30;
  const killer = (async () => {
    for (let cycle = 0; wanted(); cycle += 1) {
      await new Promise((r) => setTimeout(r, 1_000 + Math.random() * 2_000));
      if (!wanted()) break;
      await stack.killOrchestrator();
      kills += 1;
      if (sending) killsWhileSending += 1;
      // Every other restart is killed again part-way through its start-up (before or after its
      // migrations, subsystem starts, relay hello: wherever the kill lands).
      if (cycle % 2 === 0 && wanted()) {
        kills += 1;
        if (await stack.killDuringStart(500 + Math.random() * 3_000)) bootKills += 1;
      }
      const restarted = Date.now();
      await stack.startOrchestrator();
      restartMsMax = Math.max(restartMsMax, Date.now() - restarted);
    }
  })();
  const sendStarted = Date.now();
  const sent = await stack.sendAll(PUSHES, { concurrency: 8, perSecond: 30 });
  const sendMs = Date.now() - sendStarted;
  sending = false;
  await killer;
  // After the last restart the relay's buffer drains into the orchestrator.
  const drainStarted = Date.now();
  const tally = await stack.settle(sent, 480_000);
  t.comment(tallyLine(tally, { kills, killsWhileSending, bootKills, restartMsMax, sendMs, drainMs: Date.now() - drainStarted }));

  t.ok(kills >= 3 && killsWhileSending >= 1, `the orchestrator was killed ${kills} times, ${killsWhileSending} while pushes arrived`);
  t.ok(tally.answered >= PUSHES * 0.9, `most pushes were answered 200 (${tally.answered}; refused ${tally.refused}, unanswered ${tally.unanswered})`);
  t.ok(tally.buffered > 0, 'some pushes were buffered while no orchestrator was linked');
  t.equal(tally.lost, 0, `every push answered 200 has its record (lost: ${tally.lostIds.join(', ')})\n${tally.lost > 0 ? stack.logs() : ''}`);
  t.equal(tally.duplicates, 0, `at most one run per workflow per delivery, each named by its record; one registration.updated per push to main (${tally.eventDuplicates} extra)`);
  t.equal(tally.missingRuns, 0, 'every push to main answered 200 has one run per workflow');
  t.equal(tally.relayDuplicate, 0, 'no push sent once was answered as a duplicate');
  t.equal(tally.relayBuffer, 0, "the relay's buffer drained");
});
