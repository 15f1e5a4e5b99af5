// Fault: the link between relay and orchestrator cut and healed while webhooks arrive. The
// orchestrator dials the relay through a TCP proxy the test controls (test/fixtures/tcp-proxy.ts):
//   1. cut: every proxied connection reset and new ones reset at once for a few seconds, then
//      healed (the orchestrator redials);
//   2. half-open: nothing forwarded either way while both sockets stay open (deliveries sent
//      into the link get no ack; the relay buffers them after its per-candidate ceiling), then
//      the stalled bytes flow on: the orchestrator processes deliveries the relay has already
//      buffered, and the replay of those must find them done;
//   3. half-open again, then cut: the stalled link is reset instead of resumed.
// Every push answered 200 must end as exactly one record (one run per workflow on main).
import t from 'tap';
import { faultCluster, startFaultStack, tallyLine } from '../fixtures/fault-stack.ts';
import { startTcpProxy, type TcpProxy } from '../fixtures/tcp-proxy.ts';

t.setTimeout(1_200_000);

const PUSHES = 450;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

await t.test('relay link cut, stalled half-open and healed under webhooks: nothing answered 200 is lost or doubled', async (t) => {
  const dbs = await faultCluster(t);
  let proxy: TcpProxy | undefined;
  const stack = await startFaultStack(t, {
    ...dbs,
    platformUrl: async (relayUrl) => {
      proxy = await startTcpProxy(t, Number(new URL(relayUrl).port));
      return `http://127.0.0.1:${proxy.port}`;
    },
  });
  const link = proxy!;

  const faults = (async () => {
    await sleep(3_000);
    link.cut();
    await sleep(4_000);
    link.heal();
    await sleep(4_000);
    link.stall();
    await sleep(8_000);
    link.heal();
    await sleep(4_000);
    link.stall();
    await sleep(6_000);
    link.cut();
    await sleep(2_000);
    link.heal();
  })();
  const sent = await stack.sendAll(PUSHES, { concurrency: 8, perSecond: 15 });
  await faults;
  const drainStarted = Date.now();
  const tally = await stack.settle(sent, 180_000);
  t.comment(tallyLine(tally, { linksProxied: link.proxied, linksReset: link.reset, drainMs: Date.now() - drainStarted }));

  t.ok(link.reset >= 2, `connections were reset (${link.reset})`);
  t.ok(link.proxied >= 2, `the orchestrator redialled (${link.proxied} connections)`);
  t.ok(tally.answered >= PUSHES * 0.9, `most pushes were answered 200 (${tally.answered}; refused ${tally.refused}, unanswered ${tally.unanswered})`);
  t.ok(tally.buffered > 0, 'some pushes were buffered while the link was down');
  t.equal(tally.lost, 0, `every push answered 200 has its record (lost: ${tally.lostIds.join(', ')})\n${tally.lost > 0 ? stack.logs() : ''}`);
  t.equal(tally.duplicates, 0, `at most one run per workflow per delivery, each named by its record; one registration.updated per push to main (${tally.eventDuplicates} extra)`);
  t.equal(tally.missingRuns, 0, 'every push to main answered 200 has one run per workflow');
  t.equal(tally.relayDuplicate, 0, 'no push sent once was answered as a duplicate');
  t.equal(tally.relayBuffer, 0, "the relay's buffer drained");
});
