// Concurrency groups and the gates a ready job passes (job approval, a context's required
// reviewers, wait timer and concurrency limit, a job's group), pass by pass on a real PostgreSQL.
import t from 'tap';
import { decideRun } from '../../../../kernel/orchestrator/run-control/approvals.ts';
import { applyGroupKeys } from '../../../../kernel/orchestrator/run-control/concurrency.ts';
import { createContext } from '../../../../kernel/orchestrator/secrets/index.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { ALICE_ONLY, finishRun, job, jobStates, lockWorkflow, migrated, newRun, pass, runState } from './harness.ts';

t.test('run concurrency groups', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db.pool);

    await t.test('max 1: runs of a group are admitted one at a time, oldest first', async (t) => {
      const wf = lockWorkflow([job('deploy')], { name: 'serial', concurrency: { hasGroup: false, cancelInProgress: false, max: 1 } });
      const runs = [await newRun(db.pool, wf), await newRun(db.pool, wf), await newRun(db.pool, wf)];
      for (const r of runs) t.match(await runState(db.pool, r), { status: 'queued', concurrency_state: 'waiting', concurrency_group: 'workflow:acme/widgets:serial' });
      const order: string[] = [];
      for (let round = 0; round < 3; round += 1) {
        await pass(db.pool);
        const admitted: string[] = [];
        for (const r of runs) if ((await runState(db.pool, r)).concurrency_state === 'admitted' && (await runState(db.pool, r)).status !== 'completed') admitted.push(r);
        t.equal(admitted.length, 1, `round ${round}: one run of the group at a time`);
        t.equal((await jobStates(db.pool, admitted[0]!))['deploy']?.status, 'queued', 'its job is queued');
        for (const r of runs.filter((x) => !admitted.includes(x))) {
          if ((await runState(db.pool, r)).status !== 'completed') t.equal((await jobStates(db.pool, r))['deploy']?.status, 'waiting', 'the others wait');
        }
        order.push(admitted[0]!);
        await pass(db.pool);
        await finishRun(db.pool, admitted[0]!);
      }
      t.same(order, runs, 'in the order they were created');
      for (const r of runs) t.equal((await runState(db.pool, r)).status, 'completed');
    });

    await t.test('max 2 admits two', async (t) => {
      const wf = lockWorkflow([job('deploy')], { name: 'pair', concurrency: { hasGroup: false, cancelInProgress: false, max: 2 } });
      const runs = [await newRun(db.pool, wf), await newRun(db.pool, wf), await newRun(db.pool, wf)];
      await pass(db.pool);
      const states = await Promise.all(runs.map(async (r) => (await runState(db.pool, r)).concurrency_state));
      t.same(states, ['admitted', 'admitted', 'waiting']);
    });

    await t.test('cancelInProgress: a newer run cancels the older ones, then runs', async (t) => {
      const wf = lockWorkflow([job('deploy')], { name: 'latest', concurrency: { hasGroup: false, cancelInProgress: true } });
      const first = await newRun(db.pool, wf);
      await pass(db.pool);
      t.equal((await runState(db.pool, first)).concurrency_state, 'admitted');
      const second = await newRun(db.pool, wf);
      const third = await newRun(db.pool, wf);
      await pass(db.pool);
      for (const older of [first, second]) {
        t.match(await runState(db.pool, older), { status: 'cancelled', cancelled_by: 'svc:concurrency', reason: `Cancelled: a newer run (${third}) in concurrency group workflow:acme/widgets:latest (cancelInProgress)` });
      }
      await pass(db.pool);
      t.match(await runState(db.pool, third), { status: 'queued', concurrency_state: 'admitted' });
      t.equal((await jobStates(db.pool, third))['deploy']?.status, 'queued');
    });

    await t.test('a key from workflow code: nothing but the filter runs until it is reported', async (t) => {
      const wf = lockWorkflow([job('deploy')], { name: 'keyed', concurrency: { hasGroup: true, cancelInProgress: false } });
      const runId = await newRun(db.pool, wf);
      const jobs = await jobStates(db.pool, runId);
      t.equal(jobs['svc:filter']?.status, 'queued', 'the filter pseudo-job computes the key');
      t.equal(jobs['deploy']?.status, 'waiting');
      await pass(db.pool);
      t.match(await runState(db.pool, runId), { concurrency_group: null, concurrency_state: 'waiting' }, 'no key, no admission');
      t.equal(await db.pool.transaction((tx) => applyGroupKeys(tx, { id: runId, workflow: wf }, {})), 'the agent reported no concurrency group key for the workflow (it may predate concurrency groups: upgrade it)');
      await db.pool.transaction((tx) => applyGroupKeys(tx, { id: runId, workflow: wf }, { workflow: 'deploy-prod' }));
      await finishRun(db.pool, runId);
      await pass(db.pool);
      t.match(await runState(db.pool, runId), { concurrency_group: 'deploy-prod', concurrency_state: 'admitted' });
      t.equal((await jobStates(db.pool, runId))['deploy']?.status, 'queued');
    });

    await t.test('a held run takes no slot until approved', async (t) => {
      const wf = lockWorkflow([job('deploy')], { name: 'heldgroup', approval: ALICE_ONLY, concurrency: { hasGroup: false, cancelInProgress: false } });
      const held = await newRun(db.pool, wf);
      const free = await newRun(db.pool, lockWorkflow([job('deploy')], { name: 'heldgroup', concurrency: { hasGroup: false, cancelInProgress: false } }));
      await pass(db.pool);
      t.match(await runState(db.pool, held), { status: 'held', concurrency_state: 'waiting' });
      t.equal((await runState(db.pool, free)).concurrency_state, 'admitted', 'the younger run is not blocked by a held one');
      await decideRun(db.pool, { orgId: 'org-1', runId: held, actor: 'alice', decision: 'approve', via: 'cli' });
      await pass(db.pool);
      t.equal((await runState(db.pool, held)).concurrency_state, 'waiting', 'approved, it waits for the slot');
      await finishRun(db.pool, free);
      await pass(db.pool);
      t.equal((await runState(db.pool, held)).concurrency_state, 'admitted');
    });
  });
});

t.test('job gates', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrated(db.pool);
    await createContext(db.pool, { name: 'prod', repositories: ['acme/*'], minTrust: 'any', requiredReviewers: ['alice'] });
    await createContext(db.pool, { name: 'slow', repositories: ['acme/*'], minTrust: 'any', waitTimerSeconds: 60 });
    await createContext(db.pool, { name: 'single', repositories: ['acme/*'], minTrust: 'any', concurrencyLimit: 1 });
    await createContext(db.pool, { name: 'plain', repositories: ['acme/*'], minTrust: 'any' });

    await t.test('a plain context: the job passes at once', async (t) => {
      const runId = await newRun(db.pool, lockWorkflow([job('build', { contexts: ['plain'] })]));
      t.equal((await jobStates(db.pool, runId))['build']?.status, 'waiting', 'gated jobs go through the worker');
      await pass(db.pool);
      t.match((await jobStates(db.pool, runId))['build'], { status: 'queued', held_contexts: ['plain'] });
    });

    await t.test('required reviewers: held until one approves; others are ignored', async (t) => {
      const runId = await newRun(db.pool, lockWorkflow([job('deploy', { contexts: ['prod'] }), job('notify', { needs: ['deploy'] })]));
      await pass(db.pool);
      t.match((await jobStates(db.pool, runId))['deploy'], { status: 'held', reason: /Awaiting approval \(secret context prod\): secret context prod requires a reviewer \(alice\)/ });
      const bob = await decideRun(db.pool, { orgId: 'org-1', runId, actor: 'bob', decision: 'approve', via: 'dashboard' });
      t.match(bob.decisions[0], { level: 'context', context: 'prod', job: 'deploy', counted: false, ignoredReason: /bob may not decide this context hold/ });
      await pass(db.pool);
      t.equal((await jobStates(db.pool, runId))['deploy']?.status, 'held');
      const alice = await decideRun(db.pool, { orgId: 'org-1', runId, actor: 'alice', decision: 'approve', via: 'dashboard', job: 'deploy' });
      t.equal(alice.decisions[0]?.status, 'approved');
      t.equal((await jobStates(db.pool, runId))['deploy']?.status, 'waiting', 'back through its remaining gates');
      await pass(db.pool);
      t.match((await jobStates(db.pool, runId))['deploy'], { status: 'queued', reason: null, held_contexts: ['prod'] });
    });

    await t.test('a rejected reviewer hold cancels the job and skips its dependents', async (t) => {
      const runId = await newRun(db.pool, lockWorkflow([job('deploy', { contexts: ['prod'] }), job('notify', { needs: ['deploy'] })]));
      await pass(db.pool);
      await decideRun(db.pool, { orgId: 'org-1', runId, actor: 'alice', decision: 'reject', via: 'cli', comment: 'freeze' });
      const jobs = await jobStates(db.pool, runId);
      t.match(jobs['deploy'], { status: 'cancelled', reason: 'Secret context prod approval rejected by alice: freeze' });
      t.match(jobs['notify'], { status: 'skipped' });
      t.equal((await runState(db.pool, runId)).status, 'cancelled');
    });

    await t.test('a job approval gate, then the context gates', async (t) => {
      const runId = await newRun(db.pool, lockWorkflow([job('release', { approval: { ...ALICE_ONLY, reason: 'ships to users' }, contexts: ['plain'] })]));
      await pass(db.pool);
      t.match((await jobStates(db.pool, runId))['release'], { status: 'held', reason: 'Awaiting approval (job release): ships to users' });
      await decideRun(db.pool, { orgId: 'org-1', runId, actor: 'alice', decision: 'approve', via: 'cli' });
      await pass(db.pool);
      t.equal((await jobStates(db.pool, runId))['release']?.status, 'queued');
    });

    await t.test('a wait timer delays the job by its time', async (t) => {
      const runId = await newRun(db.pool, lockWorkflow([job('deploy', { contexts: ['slow'] })]));
      await pass(db.pool);
      t.match((await jobStates(db.pool, runId))['deploy'], { status: 'waiting', reason: /^Wait timer of secret context slow \(60 s\): released at / });
      // Its minute passes: the job was ready an hour ago.
      await db.pool.query(sql.unsafe`UPDATE jobs SET ready_at = ready_at - interval '1 hour' WHERE run_id = ${runId}`);
      const readyAt = Number(await db.pool.oneFirst(sql.unsafe`SELECT extract(epoch FROM ready_at) * 1000 FROM jobs WHERE run_id = ${runId}`));
      await pass(db.pool);
      t.equal((await jobStates(db.pool, runId))['deploy']?.status, 'queued');
      const queuedAt = Number(await db.pool.oneFirst(sql.unsafe`SELECT extract(epoch FROM queued_at) * 1000 FROM jobs WHERE run_id = ${runId}`));
      t.ok(queuedAt - readyAt >= 60_000, 'queued no earlier than its timer');
    });

    await t.test('a context concurrency limit: one job holds it at a time', async (t) => {
      const a = await newRun(db.pool, lockWorkflow([job('deploy', { contexts: ['single'] })]));
      const b = await newRun(db.pool, lockWorkflow([job('deploy', { contexts: ['single'] })]));
      await pass(db.pool);
      t.equal((await jobStates(db.pool, a))['deploy']?.status, 'queued');
      t.match((await jobStates(db.pool, b))['deploy'], { status: 'waiting', reason: 'Waiting: secret context single allows 1 job(s) at once and 1 hold it' });
      await finishRun(db.pool, a);
      await pass(db.pool);
      t.equal((await jobStates(db.pool, b))['deploy']?.status, 'queued');
    });

    await t.test('a job concurrency group across runs', async (t) => {
      const wf = lockWorkflow([job('migrate', { concurrency: { hasGroup: false, cancelInProgress: false } })], { name: 'jobgroup' });
      const a = await newRun(db.pool, wf);
      const b = await newRun(db.pool, wf);
      await pass(db.pool);
      t.equal((await jobStates(db.pool, a))['migrate']?.status, 'queued');
      t.match((await jobStates(db.pool, b))['migrate'], { status: 'waiting', reason: /^Waiting for a slot in concurrency group job:acme\/widgets:jobgroup:migrate: 1 of 1 taken/ });
      await finishRun(db.pool, a);
      await pass(db.pool);
      t.equal((await jobStates(db.pool, b))['migrate']?.status, 'queued');
    });

    await t.test('a job group with cancelInProgress cancels the older job', async (t) => {
      const wf = lockWorkflow([job('preview', { concurrency: { hasGroup: false, cancelInProgress: true } })], { name: 'previews' });
      const a = await newRun(db.pool, wf);
      await pass(db.pool);
      t.equal((await jobStates(db.pool, a))['preview']?.status, 'queued');
      const b = await newRun(db.pool, wf);
      await pass(db.pool);
      t.match((await jobStates(db.pool, a))['preview'], { status: 'cancelled', reason: /cancelInProgress/ });
      await pass(db.pool);
      t.equal((await jobStates(db.pool, b))['preview']?.status, 'queued');
    });
  });
});
