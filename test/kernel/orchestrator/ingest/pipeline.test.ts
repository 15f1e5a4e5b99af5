// The ingest pipeline against real PostgreSQL (twice: system and embedded), a real plugin host
// and filesystem storage: every delivery status, rotation, dedup, shed and replay, forks,
// lock acceptance, payload omission, build coalescing and matrix expansion.
import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { LOCK_SCHEMA_VERSION } from '../../../../schemas/lock.ts';
import { sourcePointerKey } from '../../../../kernel/orchestrator/ingest/steps/caches.ts';
import { rotateSourceSecret } from '../../../../kernel/orchestrator/sources/store.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { NotFoundError } from '../../../../core/errors.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { issueCommentPayload, pullRequestPayload, pushPayload, SHA_A, SHA_B } from '../../../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../../../fixtures/locks.ts';
import { count, deliveryRow, delivery, jobsOfRun, LOCK_PATH, makeHarness } from './harness.ts';

const contentHashOf = (name: string) => workflow(name, [trig.push()]).contentHash;

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { source, secret } = await h.addSource();
  h.forge.putLock(SHA_A, [workflow('ci', [trig.push({ branches: ['main'] })])]);

  await t.test('a matching push: run, jobs, record with every step, payload stored', async (t) => {
    await h.storage.put(sourcePointerKey('acme', contentHashOf('ci')), Buffer.from('digest'));
    const d = delivery(pushPayload(), { secret });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.equal(outcome.result, 'accepted');
    t.equal(outcome.status, 'matched');
    t.equal(outcome.runIds.length, 1);
    const row = await deliveryRow(db, d.deliveryId);
    t.equal(row?.status, 'matched');
    t.same(row?.run_ids, outcome.runIds);
    t.same(
      row?.steps.map((s) => s.step),
      ['admission', 'verify-signature', 'dedup', 'resolve-provider', 'normalize', 'repository', 'approval-commands', 'trust', 'lock-fetch', 'registrations', 'changed-files', 'match', 'requires', 'caches', 'dispatch', 'delivery-record'],
      'the 16 steps in order',
    );
    t.equal(row?.payload_key, `event-log/acme/${d.deliveryId}.json.gz`);
    // The object is written after the ack; until it is confirmed the record says storage_failed.
    t.ok(await h.pipeline.eventLog.drain(), 'event-log writes drained');
    const stored = await deliveryRow(db, d.deliveryId);
    t.same([stored?.payload_omitted, stored?.payload_omitted_reason], [false, null], 'confirmed once written');
    t.ok(await h.storage.head(row!.payload_key!), 'payload object exists');
    const jobs = await jobsOfRun(db, outcome.runIds[0]!);
    t.same(jobs.map((j) => [j.name, j.status]), [['build', 'queued']], 'source cache hit: job queued at once');
    const run = (await db.pool.one(sql.unsafe`select source_id::text as s, trust_tier, is_fork, subject_kind, workflow_repository, sha from runs where id = ${outcome.runIds[0]!}`)) as Record<string, string>;
    t.same(run, { s: source.id, trust_tier: 'trusted', is_fork: 'false', subject_kind: 'ref', workflow_repository: 'acme/app', sha: SHA_A });
    t.equal(await count(db, 'registrations', sql.fragment`repository = 'acme/app'`), 0, 'a push-only lock registers nothing');
    t.equal(await count(db, 'ingest_events', sql.fragment`name = 'registration.updated'`), 1, 'registration.updated emitted on the default-branch push');
    await h.storage.delete(sourcePointerKey('acme', contentHashOf('ci')));
  });

  await t.test('bad signatures, unknown and misconfigured sources are refused and change nothing', async (t) => {
    const runsBefore = await count(db, 'runs');
    const bad = delivery(pushPayload(), { signature: `sha256=${'0'.repeat(64)}` });
    t.equal((await h.pipeline.ingestDelivery(bad)).result, 'rejected_signature');
    t.equal((await deliveryRow(db, bad.deliveryId))?.status, 'rejected_signature');
    const missing = delivery(pushPayload(), {});
    t.equal((await h.pipeline.ingestDelivery(missing)).result, 'rejected_signature', 'no signature header');
    const unknown = delivery(pushPayload(), { secret, routingKey: 'forge:999' });
    t.equal((await h.pipeline.ingestDelivery(unknown)).result, 'rejected_unknown_source');
    // A source sealed under another master key cannot be opened.
    const other = await h.addSource({ targetId: '8' });
    await db.pool.query(sql.unsafe`update sources set secret_sealed = ${randomBytes(40).toString('base64')} where id = ${other.source.id}`);
    const mis = delivery(pushPayload(), { secret: other.secret, routingKey: 'forge:8' });
    const outcome = await h.pipeline.ingestDelivery(mis);
    t.equal(outcome.result, 'rejected_misconfigured');
    t.match(outcome.message, /cannot be used/);
    // A corrected, signed delivery of the same id upgrades the rejected row.
    const good = delivery(pushPayload(), { secret, deliveryId: bad.deliveryId });
    t.equal((await h.pipeline.ingestDelivery(good)).status, 'matched');
    t.equal((await deliveryRow(db, bad.deliveryId))?.status, 'matched', 'row upgraded in place');
    t.equal(await count(db, 'runs'), runsBefore + 1);
  });

  await t.test('rotation: both secrets verify until the rotation is finished', async (t) => {
    const { secret: next } = await rotateSourceSecret(db.pool, h.masterKey, source.id);
    h.pipeline.sources.clear();
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload(), { secret }))).status, 'matched', 'old secret');
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload(), { secret: next! }))).status, 'matched', 'new secret');
    await rotateSourceSecret(db.pool, h.masterKey, source.id, { finish: true });
    h.pipeline.sources.clear();
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload(), { secret }))).result, 'rejected_signature', 'old secret refused after finish');
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload(), { secret: next! }))).status, 'matched');
    Object.assign(h, { secretNow: next });
  });
  const secretNow = (h as unknown as { secretNow: string }).secretNow;

  await t.test('dedup: memory on this node, the database across nodes; one record, one run', async (t) => {
    const d = delivery(pushPayload(), { secret: secretNow });
    const first = await h.pipeline.ingestDelivery(d);
    t.equal(first.status, 'matched');
    const again = await h.pipeline.ingestDelivery({ ...d, replay: true });
    t.equal(again.result, 'duplicate');
    const otherNode = h.newPipeline({ nodeId: 'node-b' });
    t.equal((await otherNode.ingestDelivery({ ...d, replay: true })).result, 'duplicate', 'persisted dedup');
    const row = await deliveryRow(db, d.deliveryId);
    t.equal(row?.status, 'matched', 'the record keeps its outcome');
    t.ok((row?.duplicates ?? 0) >= 1);
    t.equal(await count(db, 'runs', sql.fragment`delivery_id = ${d.deliveryId}`), 1);
  });

  await t.test('shed at admission, recorded; a later replay upgrades the row', async (t) => {
    const full = h.newPipeline({ admission: { maxInFlight: 0, retryAfterSeconds: 7 } });
    const d = delivery(pushPayload(), { secret: secretNow });
    const shed = await full.ingestDelivery(d);
    t.same([shed.result, shed.retryAfterSeconds, shed.status], ['shed_retry_later', 7, 'shed']);
    const row = await deliveryRow(db, d.deliveryId);
    t.equal(row?.status, 'shed');
    t.match(row?.shed_reason, /in-flight limit/);
    t.equal(await count(db, 'runs', sql.fragment`delivery_id = ${d.deliveryId}`), 0);
    const replayed = await h.pipeline.ingestDelivery({ ...d, replay: true });
    t.equal(replayed.status, 'matched');
    const after = await deliveryRow(db, d.deliveryId);
    t.equal(after?.status, 'matched');
    t.equal(after?.shed_reason, null);
    t.equal(after?.attempts, 2);
  });

  await t.test('a lock fetch failure that can pass: accepted, kept for retry, finished by a later attempt', async (t) => {
    h.forge.failLockFetch = 'forge unreachable';
    const d = delivery(pushPayload({ after: 'c'.repeat(40) }), { secret: secretNow });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.same([outcome.result, outcome.status], ['accepted', 'retrying'], 'the sender is not asked to resend what it never will');
    t.match(outcome.message, /kept for retry \(attempt 1 failed; next at .*\): lock file could not be fetched: forge unreachable/);
    const row = await deliveryRow(db, d.deliveryId);
    t.equal(row?.status, 'retrying');
    t.match(row?.steps.at(-1), { step: 'retry', outcome: 'kept', detail: /forge unreachable/ });
    const kept = (await db.pool.one(sql.unsafe`select state, attempts, body, headers from webhook_delivery_retries where delivery_id = ${d.deliveryId}`)) as { state: string; attempts: number; body: Buffer; headers: Record<string, string> };
    t.same([kept.state, kept.attempts], ['waiting', 1]);
    t.ok(Buffer.from(kept.body).equals(d.body), 'the exact signed bytes are kept');
    t.same(kept.headers, d.headers);
    h.forge.failLockFetch = null;
    t.equal((await h.pipeline.ingestDelivery({ ...d, replay: true })).status, 'no_lock_file', 'the retry completes');
    t.equal((await deliveryRow(db, d.deliveryId))?.status, 'no_lock_file', 'the record is finished in place');
  });

  await t.test('a lock fetch failure that cannot pass (no such commit): recorded failed with the reason, answered accepted, not kept', async (t) => {
    h.forge.failLockFetch = new NotFoundError('SVC_ERR_GIT_UNKNOWN_SHA', `commit ${'9'.repeat(40)} is not in the remote of source x`);
    const d = delivery(pushPayload({ after: '9'.repeat(40) }), { secret: secretNow });
    const outcome = await h.pipeline.ingestDelivery(d);
    h.forge.failLockFetch = null;
    t.same([outcome.result, outcome.status], ['accepted', 'failed']);
    const row = await deliveryRow(db, d.deliveryId);
    t.equal(row?.status, 'failed');
    t.match(row?.message, /lock file could not be fetched: commit 9{40} is not in the remote/);
    t.equal(await count(db, 'webhook_delivery_retries', sql.fragment`delivery_id = ${d.deliveryId}`), 0, 'nothing kept: retrying cannot help');
  });

  await t.test('no lock file: no run, no error', async (t) => {
    const d = delivery(pushPayload({ after: 'd'.repeat(40), ref: 'refs/heads/topic' }), { secret: secretNow });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.same([outcome.result, outcome.status, outcome.runIds], ['accepted', 'no_lock_file', []]);
  });

  await t.test('no match: recorded with the reason', async (t) => {
    const d = delivery(pushPayload({ ref: 'refs/heads/topic' }), { secret: secretNow });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.equal(outcome.status, 'no_match');
    const row = await deliveryRow(db, d.deliveryId);
    t.match(row?.steps.find((s) => s.step === 'match')?.detail, /ci: no_match/);
  });

  await t.test('too-old and too-new locks are lockfile_corrupt with the spec messages', async (t) => {
    const old = 'e'.repeat(40);
    h.forge.put(old, LOCK_PATH, JSON.stringify({ schemaVersion: 10, workflows: [] }));
    const d1 = delivery(pushPayload({ after: old, ref: 'refs/heads/topic' }), { secret: secretNow });
    const o1 = await h.pipeline.ingestDelivery(d1);
    t.equal(o1.status, 'lockfile_corrupt');
    t.match(o1.message, /older than the oldest supported schema.*Recompile with `svc compile` and push again/);
    const fresh = 'f'.repeat(40);
    h.forge.put(fresh, LOCK_PATH, JSON.stringify({ schemaVersion: LOCK_SCHEMA_VERSION + 5, minReaderVersion: LOCK_SCHEMA_VERSION + 3, workflows: [] }));
    const d2 = delivery(pushPayload({ after: fresh, ref: 'refs/heads/topic' }), { secret: secretNow });
    const o2 = await h.pipeline.ingestDelivery(d2);
    t.equal(o2.status, 'lockfile_corrupt');
    t.match(o2.message, new RegExp(`Upgrade the orchestrator to a version supporting lock schema ${LOCK_SCHEMA_VERSION + 3}`));
    t.equal((await deliveryRow(db, d2.deliveryId))?.message, o2.message);
    const garbage = '1'.repeat(40);
    h.forge.put(garbage, LOCK_PATH, '{not json');
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload({ after: garbage, ref: 'refs/heads/topic' }), { secret: secretNow }))).status, 'lockfile_corrupt');
  });

  await t.test('pull requests: same-repo trusted; fork unknown, base lock, workflow_modified; fork ignore', async (t) => {
    h.forge.putLock(SHA_B, [workflow('pr-ci', [trig.pr()])]);
    h.forge.putLock(SHA_A, [workflow('ci', [trig.push({ branches: ['main'] })]), workflow('pr-ci', [trig.pr()])]);
    h.pipeline.locks.clear();
    const same = await h.pipeline.ingestDelivery(delivery(pullRequestPayload(), { secret: secretNow, eventType: 'pull_request' }));
    t.equal(same.status, 'matched');
    const sameRun = (await db.pool.one(sql.unsafe`select trust_tier, is_fork, subject_kind, workflow_sha from runs where id = ${same.runIds[0]!}`)) as Record<string, string>;
    t.same(sameRun, { trust_tier: 'trusted', is_fork: 'false', subject_kind: 'pull_request', workflow_sha: SHA_A });

    const forkDelivery = delivery(pullRequestPayload({ headRepo: 'mallory/app' }), { secret: secretNow, eventType: 'pull_request' });
    const fork = await h.pipeline.ingestDelivery(forkDelivery);
    t.equal(fork.status, 'matched');
    const forkRun = (await db.pool.one(sql.unsafe`select trust_tier, is_fork, workflow_sha, head_repository, workflow_modified from runs where id = ${fork.runIds[0]!}`)) as Record<string, unknown>;
    t.same(forkRun, { trust_tier: 'unknown', is_fork: 'true', workflow_sha: SHA_B, head_repository: 'mallory/app', workflow_modified: true }, 'lock from the base commit');
    t.equal((await deliveryRow(db, forkDelivery.deliveryId))?.workflow_modified, true);

    await db.pool.query(sql.unsafe`update sources set fork_policy = 'ignore' where id = ${source.id}`);
    h.pipeline.sources.clear();
    const ignored = await h.pipeline.ingestDelivery(delivery(pullRequestPayload({ headRepo: 'mallory/app' }), { secret: secretNow, eventType: 'pull_request' }));
    t.same([ignored.result, ignored.status, ignored.runIds], ['accepted', 'ignored_fork', []]);
    await db.pool.query(sql.unsafe`update sources set fork_policy = 'run' where id = ${source.id}`);
    h.pipeline.sources.clear();
    h.forge.putLock(SHA_A, [workflow('ci', [trig.push({ branches: ['main'] })])]);
    h.pipeline.locks.clear();
  });

  await t.test('approval commands are recorded and never matched', async (t) => {
    const d = delivery(issueCommentPayload('/svc approve looks fine'), { secret: secretNow, eventType: 'issue_comment' });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.equal(outcome.status, 'approval_command');
    const row = (await db.pool.one(sql.unsafe`select command, argument, author, pull_request from approval_commands where delivery_id = ${d.deliveryId}`)) as Record<string, unknown>;
    t.same(row, { command: 'approve', argument: 'looks fine', author: 'carol', pull_request: 5 });
  });

  await t.test('unknown provider and unparseable bodies are skipped, recorded', async (t) => {
    const odd = await h.addSource({ providerKind: 'nope', targetId: '1' });
    const d = delivery(pushPayload(), { secret: odd.secret, routingKey: 'nope:1', providerKind: 'nope' });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.same([outcome.result, outcome.status], ['accepted', 'skipped']);
    t.match(outcome.message, /no provider serves routing key nope:1/);
    const junk = delivery(null, { secret: secretNow, body: Buffer.from('not json') });
    t.equal((await h.pipeline.ingestDelivery(junk)).status, 'skipped');
  });

  await t.test('payload omitted: over eventLog.maxPayloadBytes, or storage failing', async (t) => {
    const small = h.newPipeline({ config: { lockfileCache: { max: 10, ttlMs: 1000 }, eventLog: { maxPayloadBytes: 10 } } });
    const d1 = delivery(pushPayload({ ref: 'refs/heads/topic' }), { secret: secretNow });
    await small.ingestDelivery(d1);
    const r1 = await deliveryRow(db, d1.deliveryId);
    t.same([r1?.payload_omitted, r1?.payload_omitted_reason, r1?.payload_key], [true, 'size_exceeded', null]);
    const broken = h.newPipeline({ storage: { ...h.storage, put: async () => Promise.reject(new Error('disk full')), head: h.storage.head.bind(h.storage) } });
    const d2 = delivery(pushPayload({ ref: 'refs/heads/topic' }), { secret: secretNow });
    t.equal((await broken.ingestDelivery(d2)).status, 'no_match', 'the delivery is still processed');
    const r2 = await deliveryRow(db, d2.deliveryId);
    t.same([r2?.payload_omitted, r2?.payload_omitted_reason], [true, 'storage_failed'], 'recorded before the write is tried');
    t.ok(await broken.eventLog.drain());
    const r3 = await deliveryRow(db, d2.deliveryId);
    t.same([r3?.payload_omitted, r3?.payload_omitted_reason, r3?.payload_key], [true, 'storage_failed', null], 'the failed write stays recorded');
    // A full backlog records the payload omitted at once.
    const tight = h.newPipeline({ eventLog: { maxQueuedBytes: 10 } });
    const d4 = delivery(pushPayload({ ref: 'refs/heads/topic' }), { secret: secretNow });
    t.equal((await tight.ingestDelivery(d4)).status, 'no_match');
    const r4 = await deliveryRow(db, d4.deliveryId);
    t.same([r4?.payload_omitted, r4?.payload_omitted_reason, r4?.payload_key], [true, 'storage_failed', null]);
  });

  await t.test('a build is shared only by runs whose jobs run where it does: an unserved label holds nobody else', async (t) => {
    const sha = '6'.repeat(40);
    // Two workflows of one commit with one content hash (as the compiler gives every workflow of a
    // .svc tree): the first one's jobs ask for agents nobody serves.
    const unserved = { ...workflow('nightly', [trig.push()], [{ ...job('sweep'), runsOn: ['nobody-serves-this'] }]), contentHash: contentHashOf('shared-tree') };
    const served = { ...workflow('deployer', [trig.push()], [job('deploy')]), contentHash: contentHashOf('shared-tree') };
    h.forge.putLock(sha, [unserved, served], { lockfileHash: `npm:${'6'.repeat(64)}` });
    const outcome = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: sha, ref: 'refs/heads/topic' }), { secret: secretNow }));
    t.equal(outcome.runIds.length, 2);
    const builds = (await db.pool.any(sql.unsafe`select build_key, runs_on from jobs where kind = 'build' and build_key like ${`${contentHashOf('shared-tree')}:%`} order by build_key`)) as Array<{ build_key: string; runs_on: string[] }>;
    t.same(builds.map((b) => [b.build_key.split('@')[1], b.runs_on]), [['linux', ['linux']], ['nobody-serves-this', ['nobody-serves-this']]], 'one build per place the jobs run');
  });

  await t.test('build coalescing: two concurrent deliveries, one build job; matrix expansion', async (t) => {
    const sha = '2'.repeat(40);
    const matrixJob = { ...job('test'), matrix: { type: 'static' as const, axes: { os: ['linux', 'mac'], node: [20, 22] }, size: 4 } };
    h.forge.putLock(sha, [workflow('matrix', [trig.push()], [job('lint'), matrixJob])], { lockfileHash: `npm:${'9'.repeat(64)}` });
    const [a, b] = await Promise.all([
      h.pipeline.ingestDelivery(delivery(pushPayload({ after: sha, ref: 'refs/heads/topic' }), { secret: secretNow })),
      h.newPipeline({ nodeId: 'node-b' }).ingestDelivery(delivery(pushPayload({ after: sha, ref: 'refs/heads/other' }), { secret: secretNow })),
    ]);
    t.equal(a.status, 'matched');
    t.equal(b.status, 'matched');
    // The key names where the build runs (the first job's labels) after the content and lock hashes.
    const key = `${contentHashOf('matrix')}:npm:${'9'.repeat(64)}@linux`;
    t.equal(await count(db, 'jobs', sql.fragment`kind = 'build' and build_key = ${key}`), 1, 'one build job for the key');
    const jobsA = await jobsOfRun(db, a.runIds[0]!);
    const jobsB = await jobsOfRun(db, b.runIds[0]!);
    const owner = jobsA.some((j) => j.kind === 'build') ? jobsA : jobsB;
    const other = owner === jobsA ? jobsB : jobsA;
    t.same(owner.filter((j) => j.kind === 'job').map((j) => j.display_name), ['lint', 'test (20, linux)', 'test (20, mac)', 'test (22, linux)', 'test (22, mac)'], 'static matrix: one row per combination');
    t.ok(owner.filter((j) => j.kind === 'job').every((j) => j.status === 'waiting' && j.needs.includes('svc:build') && j.waits_for_build === key));
    t.ok(other.every((j) => j.kind === 'job' && j.status === 'waiting' && j.waits_for_build === key), 'the other run waits for the same build');
    t.equal(owner.find((j) => j.kind === 'build')?.status, 'queued');
    t.same(owner.find((j) => j.display_name === 'test (20, mac)')?.matrix, { node: 20, os: 'mac' });
    const metrics = await h.metrics.text();
    t.match(metrics, /svc_orch_source_cache_misses_total \d+/);
    t.match(metrics, /svc_orch_dep_cache_misses_total \d+/);
    t.match(metrics, /svc_cross_source_fanout_size_count\{event="push"\} \d+/);
  });

  await t.test('requires: read at the event commit; unmet drops the candidate with the reason', async (t) => {
    const sha = '3'.repeat(40);
    h.forge.putLock(sha, [workflow('docker', [trig.push({ requires: [{ type: 'file-exists', path: 'Dockerfile' }] })])]);
    const d = delivery(pushPayload({ after: sha, ref: 'refs/heads/topic' }), { secret: secretNow });
    const o = await h.pipeline.ingestDelivery(d);
    t.equal(o.status, 'no_match');
    t.match((await deliveryRow(db, d.deliveryId))?.steps.find((s) => s.outcome === 'dropped')?.detail, /Dockerfile/);
    h.forge.put(sha, 'Dockerfile', 'FROM scratch');
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload({ after: sha, ref: 'refs/heads/x' }), { secret: secretNow }))).status, 'matched');
  });

  await t.test('a lock asking for what this version does not carry out: the matched run is not created, the reason is recorded', async (t) => {
    const sha = 'ab'.repeat(20);
    // A step hold is carried out; one whose approvers hold a role that is no org role is not (nobody could approve).
    const stepGate = { clauses: [{ users: [], teams: [], roles: ['ops'], count: 1 }], when: 'always' as const };
    const base = workflow('stepgated', [trig.push()]);
    h.forge.putLock(sha, [{ ...base, jobs: base.jobs.map((j) => ({ ...j, steps: j.steps.map((st) => ({ ...st, approval: stepGate })) })) }]);
    const d = delivery(pushPayload({ after: sha, ref: 'refs/heads/gate' }), { secret: secretNow });
    const o = await h.pipeline.ingestDelivery(d);
    t.equal(o.status, 'no_match');
    t.same(o.runIds, [], 'no run is created (its step hold could never be released)');
    const dropped = (await deliveryRow(db, d.deliveryId))?.steps.filter((s) => s.outcome === 'dropped').map((s) => s.detail) ?? [];
    t.match(dropped, [/^stepgated: not run: jobs\.[^.]+\.steps\.[^.]+\.approval\.clauses\[0\]: approval by role ops — no person holds such a role/]);
  });

  await t.test('registries with no npm lockfile (an older lock): not run, the option named; with one the run is created', async (t) => {
    const registries = [{ url: 'https://npm.example.test/', scope: '@acme', tokenSecret: 'npm:NPM_TOKEN', alwaysAuth: false }];
    const shaYarn = 'ad'.repeat(20);
    h.forge.putLock(shaYarn, [{ ...workflow('private-deps', [trig.push()]), contexts: ['npm'], registries }], { lockfileHash: `yarn:${'1'.repeat(64)}` });
    const d = delivery(pushPayload({ after: shaYarn, ref: 'refs/heads/private-yarn' }), { secret: secretNow });
    const o = await h.pipeline.ingestDelivery(d);
    t.equal(o.status, 'no_match');
    const dropped = (await deliveryRow(db, d.deliveryId))?.steps.filter((s) => s.outcome === 'dropped').map((s) => s.detail) ?? [];
    t.match(dropped, [/^private-deps: not run: registries: registries — the dependencies are locked with yarn; this version installs \.svc\/ with npm only/]);
    const shaNpm = 'ae'.repeat(20);
    h.forge.putLock(shaNpm, [{ ...workflow('private-deps', [trig.push()]), contexts: ['npm'], registries }], { lockfileHash: `npm:${'2'.repeat(64)}` });
    t.equal((await h.pipeline.ingestDelivery(delivery(pushPayload({ after: shaNpm, ref: 'refs/heads/private-npm' }), { secret: secretNow }))).status, 'matched');
  });

  await t.test('approval and concurrency are carried out: the run is held with its hold, or waits for its group', async (t) => {
    const sha = 'ac'.repeat(20);
    h.forge.putLock(sha, [
      { ...workflow('gated', [trig.push()]), approval: { clauses: [{ users: ['boss'], teams: [], roles: [], count: 1 }], when: 'always' } },
      { ...workflow('grouped', [trig.push()]), concurrency: { hasGroup: false, cancelInProgress: false, max: 2 } },
    ]);
    const o = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: sha, ref: 'refs/heads/gate2' }), { secret: secretNow }));
    t.equal(o.status, 'matched');
    t.equal(o.runIds.length, 2);
    const rows = (await db.pool.any(sql.unsafe`
      select workflow, status, concurrency_group, concurrency_state, concurrency_max,
             (select count(*)::int from approval_holds h where h.run_id = r.id and h.status = 'pending' and h.job_id is null) as holds,
             (select count(*)::int from jobs j where j.run_id = r.id and j.status = 'queued' and j.kind = 'job') as queued
      from runs r where id = any(${sql.array([...o.runIds], 'uuid')}) order by workflow`)) as unknown as Array<Record<string, unknown>>;
    t.same(rows, [
      { workflow: 'gated', status: 'held', concurrency_group: null, concurrency_state: null, concurrency_max: null, holds: 1, queued: 0 },
      { workflow: 'grouped', status: 'queued', concurrency_group: 'workflow:acme/app:grouped', concurrency_state: 'waiting', concurrency_max: 2, holds: 0, queued: 0 },
    ]);
  });

  await t.test('organization-wide workflows: registered on a default-branch push, gated by both policy axes', async (t) => {
    const libSha = '4'.repeat(40);
    h.forge.putLock(libSha, [workflow('audit', [trig.push({ repositories: ['acme/*'] })])]);
    const reg = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: libSha, repository: 'acme/lib' }), { secret: secretNow }));
    t.equal(reg.status, 'matched', 'its own push runs it');
    t.equal(await count(db, 'registrations', sql.fragment`repository = 'acme/lib' and global`), 1);
    const appSha = '5'.repeat(40);
    const closed = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: appSha }), { secret: secretNow }));
    t.equal(closed.status, 'no_lock_file', 'no policy: fails closed');
    await db.pool.query(sql.unsafe`update sources set org_wide_workflow_repositories = '{acme/lib}', org_wide_source_repositories = '{*}' where id = ${source.id}`);
    h.pipeline.sources.clear();
    const open = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: appSha }), { secret: secretNow }));
    t.equal(open.status, 'matched');
    const run = (await db.pool.one(sql.unsafe`select repository, workflow_repository, workflow_sha, sha, workflow_source_id::text as ws from runs where id = ${open.runIds[0]!}`)) as Record<string, string>;
    t.same(run, { repository: 'acme/app', workflow_repository: 'acme/lib', workflow_sha: libSha, sha: appSha, ws: source.id });
    h.forge.failCredentials = true;
    const noToken = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: appSha }), { secret: secretNow }));
    t.equal(noToken.status, 'no_lock_file', 'no workflowAuth: dropped');
    t.match(await h.metrics.text(), /svc_cross_source_errors_total\{reason="clone_token"\} 1/);
    h.forge.failCredentials = false;
  });

  await t.test('replay of many deliveries after an interruption: one record and one run each', async (t) => {
    const ds = Array.from({ length: 5 }, () => delivery(pushPayload(), { secret: secretNow, deliveryId: randomUUID() }));
    await Promise.all(ds.map((d) => h.pipeline.ingestDelivery(d)));
    await Promise.all(ds.map((d) => h.newPipeline({ nodeId: 'node-c' }).ingestDelivery({ ...d, replay: true })));
    for (const d of ds) {
      t.equal(await count(db, 'webhook_deliveries', sql.fragment`delivery_id = ${d.deliveryId}`), 1);
      // ci (its own lock) and audit (organization-wide, from acme/lib): one run each.
      t.equal(await count(db, 'runs', sql.fragment`delivery_id = ${d.deliveryId}`), 2);
      t.same((await deliveryRow(db, d.deliveryId))?.run_ids.length, 2);
    }
  });
});
