// Fault: PostgreSQL restarted under load. The test runs its OWN cluster (test/fixtures/fault-stack.ts
// faultCluster: embedded PostgreSQL on its own port; the system server is shared with other tests
// and never touched) holding both the orchestrator's and the relay's databases.
// While signed pushes arrive at the relay the cluster is stopped (fast shutdown), left down for
// a few seconds and started again on the same data directory and port. Neither server is
// restarted: both must recover by themselves (new pushes answered 200 and recorded), and every
// push answered 200 before, during or after the outage ends as exactly one record (one run per
// workflow on main). Pushes refused during the outage (429 from the orchestrator, 503 from the
// relay's buffer) are the sender's to retry; they are counted, not required.
import t from 'tap';
import { faultCluster, queryOnce, startFaultStack, tallyLine, type Sent } from '../fixtures/fault-stack.ts';

t.setTimeout(1_200_000);

const PUSHES = 450;
const DOWN_MS = 4_000;

await t.test('PostgreSQL stopped and started under load: both servers recover unattended, nothing answered 200 is lost', async (t) => {
  const cluster = await faultCluster(t);
  const stack = await startFaultStack(t, cluster);
  const relayPid = stack.relay()!.child.pid;
  const orchestratorPid = stack.orchestrator()!.child.pid;

  let stoppedAt = 0;
  let startedAt = 0;
  // The outage starts once a third of the pushes are recorded (on their effect, not a fixed time):
  // the rest arrive while the database is down and after.
  const recorded = async () => Number((await queryOnce<{ n: string }>(stack.orchestratorDbUrl, 'select count(*) as n from webhook_deliveries'))[0]?.n ?? 0);
  const recordedBefore = await recorded();
  const outage = (async () => {
    for (const waitUntil = Date.now() + 120_000; (await recorded()) < recordedBefore + PUSHES / 3 && Date.now() < waitUntil; ) await new Promise((r) => setTimeout(r, 100));
    stoppedAt = Date.now();
    await cluster.stop();
    await new Promise((r) => setTimeout(r, DOWN_MS));
    await cluster.start();
    startedAt = Date.now();
  })();
  const sent = await stack.sendAll(PUSHES, { concurrency: 8, perSecond: 30 });
  await outage;

  // Recovered: a push after the restart is answered 200 accepted (orchestrator linked, its
  // database back). Bounded; the servers are never restarted by the test.
  const acceptedAfter = (list: readonly Sent[]) => list.find((s) => s.at > startedAt && s.status === 200 && s.answer === 'accepted');
  const probes: Sent[] = [];
  const deadline = Date.now() + 120_000;
  while (acceptedAfter([...sent, ...probes]) === undefined && Date.now() < deadline) {
    probes.push(await stack.send(PUSHES + probes.length));
    await new Promise((r) => setTimeout(r, 500));
  }
  const first = acceptedAfter([...sent, ...probes]);
  const recoveredMs = first === undefined ? undefined : first.at - startedAt;
  const after = await stack.sendAll(60, { concurrency: 4, perSecond: 30, from: PUSHES + probes.length });
  const all = [...sent, ...probes, ...after];
  // Payload objects are written after the ack and confirmed in batches: confirmations the
  // database refused while it was down are kept and recorded once it is back.
  const tally = await stack.settle(all, 120_000, { payloads: true });
  // The relay's own database is back too: the runs made after recovery reach its run index
  // (the orchestrator's status forwarder and the relay's writes both recovered). Bounded.
  const afterIds = after.filter((s) => s.matches).map((s) => s.deliveryId);
  const afterRuns = (await queryOnce<{ id: string }>(stack.orchestratorDbUrl, 'select id::text as id from runs where delivery_id = any($1::text[])', [afterIds])).map((r) => r.id);
  let relayIndexMissing = afterRuns.length;
  for (const indexed = Date.now() + 120_000; relayIndexMissing > 0 && Date.now() < indexed; await new Promise((r) => setTimeout(r, 500))) {
    const rows = await queryOnce<{ n: string }>(stack.relayDbUrl, 'select count(*) as n from relay_runs where run_id = any($1::text[])', [afterRuns]);
    relayIndexMissing = afterRuns.length - Number(rows[0]?.n ?? 0);
  }
  const during = sent.filter((s) => s.status !== 200);
  t.comment(
    tallyLine(tally, {
      downMs: startedAt - stoppedAt,
      recoveredMs: recoveredMs ?? -1,
      refusedStatuses: [...new Set(during.map((s) => `${s.status}:${s.answer}`))].join(',') || 'none',
      relayIndexMissing,
    }),
  );

  t.equal(stack.relay()?.child.pid, relayPid, 'the relay was not restarted');
  t.equal(stack.relay()?.child.exitCode, null, 'the relay is still running');
  t.equal(stack.orchestrator()?.child.pid, orchestratorPid, 'the orchestrator was not restarted');
  t.equal(stack.orchestrator()?.child.exitCode, null, 'the orchestrator is still running');
  t.not(recoveredMs, undefined, 'a push after the restart was accepted');
  t.ok(after.every((s) => s.status === 200 && s.answer === 'accepted'), `every push after recovery was accepted (${after.filter((s) => s.answer !== 'accepted').map((s) => `${s.status}:${s.answer}`).join(', ')})`);
  t.ok(afterRuns.length > 0 && relayIndexMissing === 0, `the relay's run index has the ${afterRuns.length} runs made after recovery (${relayIndexMissing} missing)`);
  t.equal(tally.lost, 0, `every push answered 200 has its record (lost: ${tally.lostIds.join(', ')})\n${tally.lost > 0 ? stack.logs() : ''}`);
  t.equal(tally.duplicates, 0, `at most one run per workflow per delivery, each named by its record; one registration.updated per push to main (${tally.eventDuplicates} extra)`);
  t.equal(tally.missingRuns, 0, 'every push to main answered 200 has one run per workflow');
  t.equal(tally.relayBuffer, 0, "the relay's buffer drained");
  t.equal(tally.payloadOmitted, 0, 'every recorded payload is confirmed stored (none left saying storage_failed)');
});
