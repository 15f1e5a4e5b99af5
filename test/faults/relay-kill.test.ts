// Fault: the relay SIGKILLed mid-stream (real svc-relay and svc-orchestrator,
// test/fixtures/fault-stack.ts) and started again on the same port and database:
//   1. while pushes are relayed live to a linked orchestrator;
//   2. while the orchestrator is away, so pushes are being written to the relay's buffer;
//   3. while the buffer is being replayed to the orchestrator that came back.
// Every push the relay answered 200 (accepted, or buffered: committed before the answer) must
// end as exactly one record, one run per workflow on main. Pushes that got no answer (the relay
// died first) are the sender's to retry; some of them were committed anyway and are delivered.
import t from 'tap';
import { faultCluster, queryOnce, startFaultStack, tallyLine } from '../fixtures/fault-stack.ts';
import { volume } from '../fixtures/volume.ts';

t.setTimeout(1_200_000);

// 90 pushes a phase in npm test (six seconds of sending at 15/s, so each kill lands mid-stream);
// 150 a phase in test:full.
const PUSHES = volume(270, 450);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

await t.test('relay SIGKILLed mid-stream, with a buffer filling and draining: nothing answered 200 is lost or doubled', async (t) => {
  const dbs = await faultCluster(t);
  const stack = await startFaultStack(t, dbs);
  let relayKills = 0;
  let bufferedAtKill = 0;
  let bufferedAtReplayKill = 0;
  let killedMidReplay = false;
  const killRelay = async (): Promise<void> => {
    await stack.killRelay();
    relayKills += 1;
    await stack.startRelay();
  };

  // Each phase has pushes of its own arriving while its kill lands, however long restarts take.
  const batch = (from: number) => stack.sendAll(PUSHES / 3, { concurrency: 8, perSecond: 15, from });
  // 1. Live: the orchestrator linked. The kill lands once a third of the phase's pushes are
  //    recorded (on their effect, not after a fixed time).
  const recorded = async () => Number((await queryOnce<{ n: string }>(stack.orchestratorDbUrl, 'select count(*) as n from webhook_deliveries'))[0]?.n ?? 0);
  const recordedBefore = await recorded();
  const live = batch(0);
  for (const waitUntil = Date.now() + 120_000; (await recorded()) < recordedBefore + PUSHES / 9 && Date.now() < waitUntil; ) await sleep(100);
  await killRelay();
  const sent = await live;
  // 2. Buffering: no orchestrator, so the relay commits every push to its buffer; the kill lands
  //    with rows in it and inserts in flight.
  await stack.killOrchestrator();
  const before = await stack.relayBuffered();
  const buffering = batch(PUSHES / 3);
  for (const waitUntil = Date.now() + 120_000; (await stack.relayBuffered()) < before + 20 && Date.now() < waitUntil; ) await sleep(250);
  bufferedAtKill = await stack.relayBuffered();
  await killRelay();
  sent.push(...(await buffering));
  // 3. Draining: the orchestrator is back and the buffer is replayed; the kill lands mid-replay
  //    (bounded far above the time the link and the replay take to begin).
  await stack.startOrchestrator();
  const draining = batch((2 * PUSHES) / 3);
  let last = await stack.relayBuffered();
  for (const waitUntil = Date.now() + 120_000; last > 0 && Date.now() < waitUntil; ) {
    await sleep(250);
    const now = await stack.relayBuffered();
    if (now < last) {
      killedMidReplay = true;
      break;
    }
    last = now;
  }
  bufferedAtReplayKill = await stack.relayBuffered();
  await killRelay();
  sent.push(...(await draining));
  const drainStarted = Date.now();
  const tally = await stack.settle(sent, 180_000);
  t.comment(tallyLine(tally, { relayKills, bufferedAtKill, bufferedAtReplayKill, killedMidReplay: Number(killedMidReplay), drainMs: Date.now() - drainStarted }));

  t.equal(relayKills, 3, 'the relay was killed three times');
  t.ok(bufferedAtKill > 0, `the relay was killed with deliveries in its buffer (${bufferedAtKill})`);
  t.ok(killedMidReplay && bufferedAtReplayKill > 0, `the third kill landed while the buffer was being replayed (${bufferedAtReplayKill} left)`);
  t.ok(tally.accepted > 0 && tally.buffered > 0, `pushes were answered 200 both live and buffered (${tally.accepted} accepted, ${tally.buffered} buffered; ${tally.unanswered} unanswered)`);
  t.equal(tally.lost, 0, `every push answered 200 has its record (lost: ${tally.lostIds.join(', ')})\n${tally.lost > 0 ? stack.logs() : ''}`);
  t.equal(tally.duplicates, 0, `at most one run per workflow per delivery, each named by its record; one registration.updated per push to main (${tally.eventDuplicates} extra)`);
  t.equal(tally.missingRuns, 0, 'every push to main answered 200 has one run per workflow');
  t.equal(tally.relayDuplicate, 0, 'no push sent once was answered as a duplicate');
  t.equal(tally.relayBuffer, 0, "the relay's buffer drained");
});
