// Approval holds on a real PostgreSQL: who may decide, released once, rejection, expiry, cancel,
// `when`, counts, and comment commands.
import t from 'tap';
import { decideRun, holdsOfRun } from '../../../../kernel/orchestrator/run-control/approvals.ts';
import { applyCommentCommand, parseArgument } from '../../../../kernel/orchestrator/run-control/comments.ts';
import { cancelRunIn } from '../../../../kernel/orchestrator/dispatch/cancel.ts';
import type { NormalizedEvent } from '../../../../schemas/event.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ALICE_ONLY, feed, job, jobStates, lockWorkflow, migrated, newRun, pass, runState } from './harness.ts';

const gated = (extra = {}) => lockWorkflow([job('build'), job('test', { needs: ['build'] })], { approval: { ...ALICE_ONLY, ...extra } });

t.test('workflow-level holds', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db.pool);
    const decide = (runId: string, actor: string, decision: 'approve' | 'reject' = 'approve', comment?: string) =>
      decideRun(db.pool, { orgId: 'org-1', runId, actor, decision, via: 'cli', ...(comment !== undefined ? { comment } : {}) });

    await t.test('a held run waits; a non-approver is ignored with a reason; two approvals release it once', async (t) => {
      const runId = await newRun(db.pool, gated({ reason: 'production deploy' }));
      t.equal((await runState(db.pool, runId)).status, 'held');
      await pass(db.pool);
      t.same(Object.values(await jobStates(db.pool, runId)).map((j) => j.status), ['waiting', 'waiting'], 'nothing queued while held');

      const ignored = await decide(runId, 'mallory');
      t.equal(ignored.decisions[0]?.counted, false);
      t.match(ignored.decisions[0]?.ignoredReason, /mallory may not decide this workflow hold: it needs 1 of users alice/);
      t.equal((await runState(db.pool, runId)).status, 'held');

      const both = await Promise.all([decide(runId, 'alice'), decide(runId, 'ALICE')]);
      const counted = both.filter((r) => r.decisions[0]?.counted === true);
      t.equal(counted.length, 1, 'exactly one decision counted');
      t.equal(counted[0]?.decisions[0]?.status, 'approved', 'and it released the hold');
      const other = both.find((r) => r.decisions[0]?.counted !== true);
      t.match(other?.decisions[0]?.ignoredReason, /awaits approval: its workflow hold is approved \(approved by (alice|ALICE)\)/, 'the other found it already approved');
      t.same(await feed(db.pool, runId, false), ['held', 'queued'], 'the run left held once');
      const jobs = await jobStates(db.pool, runId);
      t.equal(jobs['build']!.status, 'queued');
      t.equal(jobs['test']!.status, 'waiting', 'dependents still wait for their needs');
      t.same((await feed(db.pool, runId, true)).filter((s) => s === 'queued'), ['queued'], 'one job queued, once');
      const [hold] = await holdsOfRun(db.pool, runId);
      t.match(hold, { level: 'workflow', status: 'approved', outcome: /^approved by (alice|ALICE)$/, reason: 'production deploy' });
      t.equal(hold?.votes.length, 3, 'every vote is kept');
      t.same(hold?.votes.map((v) => v.counted), [false, true, false]);
    });

    await t.test('rejection ends the run with its reason', async (t) => {
      const runId = await newRun(db.pool, gated());
      const r = await decide(runId, 'alice', 'reject', 'not today');
      t.equal(r.decisions[0]?.status, 'rejected');
      t.match(await runState(db.pool, runId), { status: 'cancelled', cancelled_by: 'alice', reason: 'Approval rejected by alice: not today' });
      t.same(Object.values(await jobStates(db.pool, runId)).map((j) => j.status), ['cancelled', 'cancelled']);
      const late = await decide(runId, 'alice');
      t.match(late.decisions[0]?.ignoredReason, /its workflow hold is rejected \(rejected by alice: not today\)/, 'a later approval starts nothing');
      t.equal((await runState(db.pool, runId)).status, 'cancelled');
    });

    await t.test('an expired hold ends the run with its reason', async (t) => {
      const runId = await newRun(db.pool, gated({ timeoutSeconds: 60 }));
      await pass(db.pool);
      t.equal((await runState(db.pool, runId)).status, 'held', 'not before its time');
      // Its minute passes: the hold is moved an hour back whole (its timeout stays 60 s).
      await db.pool.query(sql.unsafe`UPDATE approval_holds SET created_at = created_at - interval '1 hour', expires_at = expires_at - interval '1 hour' WHERE run_id = ${runId}`);
      const r = await pass(db.pool);
      t.ok(r.expired >= 1);
      t.match(await runState(db.pool, runId), { status: 'cancelled', cancelled_by: 'svc:approval-timeout', reason: /^Approval expired: no decision within 60 s/ });
    });

    await t.test('cancelling a held run rejects its hold; a later approval starts nothing', async (t) => {
      const runId = await newRun(db.pool, gated());
      await cancelRunIn(db.pool, runId, 'bob');
      t.match(await runState(db.pool, runId), { status: 'cancelled', cancelled_by: 'bob' });
      const late = await decide(runId, 'alice');
      t.equal(late.decisions[0]?.counted, false);
      t.match(late.decisions[0]?.ignoredReason, /its workflow hold is cancelled/);
      t.equal((await runState(db.pool, runId)).status, 'cancelled');
      t.notOk((await feed(db.pool, runId, true)).includes('queued'), 'no job was ever queued');
    });

    await t.test('count and clauses: every clause gathers its distinct approvers', async (t) => {
      const approval = { clauses: [{ users: ['alice', 'bob', 'carol'], teams: [], roles: [], count: 2 }, { users: ['dave'], teams: [], roles: [], count: 1 }], when: 'always' as const };
      const runId = await newRun(db.pool, lockWorkflow([job('build')], { approval }));
      t.equal((await decide(runId, 'alice')).decisions[0]?.status, 'pending');
      t.equal((await decide(runId, 'alice')).decisions[0]?.status, 'pending', 'the same person twice is one approver');
      t.equal((await decide(runId, 'bob')).decisions[0]?.status, 'pending', 'the second clause still needs dave');
      t.equal((await decide(runId, 'dave')).decisions[0]?.status, 'approved');
      t.equal((await runState(db.pool, runId)).status, 'queued');
    });

    await t.test('when: the gate applies to forks or untrusted runs only; unresolved holds', async (t) => {
      const fork = lockWorkflow([job('build')], { approval: { ...ALICE_ONLY, when: 'fork' } });
      t.equal((await runState(db.pool, await newRun(db.pool, fork, { isFork: 'false' }))).status, 'queued');
      t.equal((await runState(db.pool, await newRun(db.pool, fork, { isFork: 'true' }))).status, 'held');
      t.equal((await runState(db.pool, await newRun(db.pool, fork, { isFork: 'unresolved' }))).status, 'held', 'fails closed');
      const untrusted = lockWorkflow([job('build')], { approval: { ...ALICE_ONLY, when: 'untrusted' } });
      t.equal((await runState(db.pool, await newRun(db.pool, untrusted, { trustTier: 'trusted' }))).status, 'queued');
      t.equal((await runState(db.pool, await newRun(db.pool, untrusted, { trustTier: 'unknown' }))).status, 'held');
    });

    await t.test('bad input is refused and changes nothing', async (t) => {
      const runId = await newRun(db.pool, gated());
      await t.rejects(decide('not-a-uuid', 'alice'), { code: 'SVC_ERR_RUNS_ID_INVALID' });
      await t.rejects(decide(runId, ''), { code: 'SVC_ERR_APPROVAL_ACTOR_INVALID' });
      await t.rejects(decide(runId, 'alice', 'approve', 'x'.repeat(2001)), { code: 'SVC_ERR_APPROVAL_COMMENT_TOO_LONG' });
      await t.rejects(decideRun(db.pool, { orgId: 'other-org', runId, actor: 'alice', decision: 'approve', via: 'cli' }), { code: 'SVC_ERR_RUNS_NOT_FOUND' }, "another org's run is not found");
      t.equal((await runState(db.pool, runId)).status, 'held');
      t.equal(Number(await db.pool.oneFirst(sql.unsafe`SELECT count(*) FROM approval_votes WHERE run_id = ${runId}`)), 0);
    });
  });
});

t.test('comment commands act on the pull request held runs', async (t) => {
  t.same(parseArgument('1234abcd ship it'), { runPrefix: '1234abcd', comment: 'ship it' });
  t.same(parseArgument('ship it'), { comment: 'ship it' });
  t.same(parseArgument(''), { comment: '' });
  await eachDatabase(t, async (t, db) => {
    await migrated(db.pool);
    const event = (n: number) => ({ provider: 'github', eventName: 'pull_request', pullRequest: { number: n }, repository: { fullName: 'acme/widgets' } }) as unknown as NormalizedEvent;
    const runId = await newRun(db.pool, gated(), { event: event(7), subjectKind: 'pull_request' });
    const other = await newRun(db.pool, gated(), { event: event(8), subjectKind: 'pull_request' });
    let n = 0;
    const comment = async (author: string, command: 'approve' | 'reject', argument = '', pr: number | null = 7) => {
      const deliveryId = `d-${(n += 1)}`;
      await db.pool.query(sql.unsafe`
        INSERT INTO approval_commands (id, org_id, delivery_id, repository, pull_request, command, argument, author)
        VALUES (gen_random_uuid(), 'org-1', ${deliveryId}, 'acme/widgets', ${pr}, ${command}, ${argument}, ${author})`);
      const outcome = await applyCommentCommand(db.pool, { orgId: 'org-1', deliveryId, repository: 'acme/widgets', pullRequest: pr, author, command, argument });
      t.equal(String(await db.pool.oneFirst(sql.unsafe`SELECT outcome FROM approval_commands WHERE delivery_id = ${deliveryId}`)), outcome.slice(0, 2000), 'the outcome is stored');
      return outcome;
    };
    t.match(await comment('mallory', 'approve'), /ignored: mallory may not decide/);
    t.match(await comment('alice', 'approve', 'ffffffff'), /ignored: no run matching ffffffff of pull request #7/);
    t.match(await comment('alice', 'approve', '', null), /not on a pull request/);
    t.match(await comment('alice', 'approve', `${runId.slice(0, 8)} looks good`), /the run: approved/);
    t.equal((await runState(db.pool, runId)).status, 'queued');
    t.equal((await runState(db.pool, other)).status, 'held', 'another pull request is untouched');
    t.match(await comment('alice', 'reject', 'no', 8), /the run: rejected/);
    t.match(await runState(db.pool, other), { status: 'cancelled', reason: 'Approval rejected by alice: no' });
    t.match(await comment('alice', 'approve'), /ignored: nothing on run .* awaits approval: its workflow hold is approved/, 'a late command is kept with why it starts nothing');
    t.match(await comment('alice', 'approve', '', 9), /ignored: no run of pull request #9 in acme\/widgets awaits a decision/);
  });
});
