// Fault: the link between relay and orchestrator cut and healed while webhooks arrive. The
// orchestrator dials the relay through a TCP proxy the test controls (test/fixtures/tcp-proxy.ts):
//   1. cut: every proxied connection reset and new ones reset at once, until pushes sent meanwhile
//      were buffered and a redial was refused; then healed (the orchestrator redials);
//   2. half-open: nothing forwarded either way while both sockets stay open (deliveries sent
//      into the link get no ack; the relay buffers them after its per-candidate ceiling), then
//      the stalled bytes flow on: the orchestrator processes deliveries the relay has already
//      buffered, and the replay of those must find them done;
//   3. half-open again, then cut: the stalled link is reset instead of resumed.
// Each phase ends when what it is for was seen (answers to pushes sent during it, the proxy's
// counts), never after a set time: on a slow machine a phase lasts longer, on a fast one it is
// short, and none waits for more than the product's own ceilings. Pushes stream at 15/s until the
// last phase is over. Every push answered 200 must end as exactly one record (one run per
// workflow on main).
import t from 'tap';
import { faultCluster, startFaultStack, tallyLine, type Sent } from '../fixtures/fault-stack.ts';
import { until } from '../fixtures/runs.ts';
import { startTcpProxy, type TcpProxy } from '../fixtures/tcp-proxy.ts';

t.setTimeout(1_200_000);

const PER_SECOND = 15;
const CONCURRENCY = 8;
/** Hang guard of one phase (a half-open phase takes the relay's 5 s ack ceiling at least). */
const PHASE_GUARD_MS = 180_000;

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

  // The stream: 15 pushes a second, 8 at a time, each noted with the phase it was sent in.
  const sent: Array<Sent & { phase: number }> = [];
  let phase = 0;
  let streaming = true;
  let next = 0;
  const started = Date.now();
  const sender = async (): Promise<void> => {
    while (streaming) {
      const i = next++;
      const due = started + (i * 1000) / PER_SECOND;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      const sentIn = phase;
      sent.push({ ...(await stack.send(i)), phase: sentIn });
    }
  };
  const stream = Promise.all(Array.from({ length: CONCURRENCY }, sender));
  /** Pushes sent in phase `p` answered 200 with `answer`. */
  const answered = (p: number, answer: string) => sent.filter((s) => s.phase === p && s.status === 200 && s.answer === answer).length;
  /** How long each phase took (ms), for the counted line. */
  const phaseMs: number[] = [];
  /** Starts the next phase; resolves once `done` holds (polled). */
  const enter = async (what: string, act: () => void, done: () => boolean): Promise<void> => {
    phase += 1;
    const began = Date.now();
    act();
    await until(`${what} (phase ${phase})`, () => (done() ? true : undefined), PHASE_GUARD_MS, 50);
    phaseMs.push(Date.now() - began);
  };

  const relayed = (p: number) => answered(p, 'accepted') >= 5;
  await until('pushes relayed before any fault', () => (relayed(0) ? true : undefined), PHASE_GUARD_MS, 50);
  // 1. Cut: pushes meanwhile are buffered by the relay (no orchestrator), and a redial is refused.
  let resetByCut = 0;
  await enter('cut: pushes buffered and a redial refused', () => {
    link.cut();
    resetByCut = link.reset;
  }, () => answered(phase, 'buffered') >= 5 && link.reset > resetByCut);
  let proxied = link.proxied;
  await enter('healed: redialled, pushes relayed again', () => link.heal(), () => link.proxied > proxied && relayed(phase));
  // 2. Half-open: deliveries sent into the link wait out the relay's ack ceiling and are buffered.
  await enter('half-open: pushes buffered after the ack ceiling', () => link.stall(), () => answered(phase, 'buffered') >= 3);
  await enter('resumed: the stalled bytes flowed on, pushes relayed again', () => link.heal(), () => relayed(phase));
  // 3. Half-open again, then cut: the stalled link is reset, not resumed.
  await enter('half-open again: pushes buffered after the ack ceiling', () => link.stall(), () => answered(phase, 'buffered') >= 3);
  await enter('cut while half-open: a redial refused', () => {
    link.cut();
    resetByCut = link.reset;
  }, () => link.reset > resetByCut);
  proxied = link.proxied;
  await enter('healed: redialled, pushes relayed again', () => link.heal(), () => link.proxied > proxied && relayed(phase));
  streaming = false;
  await stream;
  const sendMs = Date.now() - started;

  const drainStarted = Date.now();
  const tally = await stack.settle(sent, 180_000);
  t.comment(tallyLine(tally, { linksProxied: link.proxied, linksReset: link.reset, sendMs, phaseMs: phaseMs.join('/'), drainMs: Date.now() - drainStarted }));

  t.ok(link.reset >= 2, `connections were reset (${link.reset})`);
  t.ok(link.proxied >= 3, `the orchestrator redialled after each cut (${link.proxied} connections)`);
  t.ok(tally.answered >= sent.length * 0.9, `most pushes were answered 200 (${tally.answered} of ${sent.length}; refused ${tally.refused}, unanswered ${tally.unanswered})`);
  t.ok(tally.buffered > 0, 'some pushes were buffered while the link was down');
  t.equal(tally.lost, 0, `every push answered 200 has its record (lost: ${tally.lostIds.join(', ')})\n${tally.lost > 0 ? stack.logs() : ''}`);
  t.equal(tally.duplicates, 0, `at most one run per workflow per delivery, each named by its record; one registration.updated per push to main (${tally.eventDuplicates} extra)`);
  t.equal(tally.missingRuns, 0, 'every push to main answered 200 has one run per workflow');
  t.equal(tally.relayDuplicate, 0, 'no push sent once was answered as a duplicate');
  t.equal(tally.relayBuffer, 0, "the relay's buffer drained");
});
