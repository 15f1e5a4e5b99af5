// Commit-message regular expressions through the whole ingest pipeline (real PostgreSQL, plugin
// host, in-memory forge): a workflow whose expression backtracks catastrophically on the commit
// message is stopped at the bound and recorded as not run with the reason, the other workflows
// of the lock match as usual, and deliveries sent meanwhile are answered. Before the guard such
// a delivery blocked the event loop for good and this file timed out. No assertion on speed.
import t from 'tap';
import type { LockCommitMessage } from '../../../../schemas/lock.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { pushPayload } from '../../../fixtures/github-payloads.ts';
import { trig, workflow } from '../../../fixtures/locks.ts';
import { count, deliveryRow, delivery, makeHarness } from './harness.ts';

const HOSTILE: LockCommitMessage = { kind: 'regex', source: '(a+)+$', flags: '' };
// `(a+)+$` never finishes on it in V8's backtracking engine.
const MESSAGE = `${'a'.repeat(40)}!`;
const TIMED_OUT = /regular expression \/\(a\+\)\+\$\/ took longer than \d+ ms on commit message "a{40}!"; treated as not matching/;

await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { source, secret } = await h.addSource();
  const sha = 'c'.repeat(40);
  h.forge.putLock(sha, [
    workflow('plain', [trig.push()]),
    workflow('hostile', [trig.push({ commitMessage: HOSTILE })]),
    // Also behind a paths filter: the changed-files probe tests commit messages too.
    workflow('hostile-paths', [trig.push({ paths: ['**'], commitMessage: HOSTILE })]),
    workflow('shout', [trig.push({ commitMessage: { kind: 'regex', source: '!$', flags: '' } })]),
  ]);

  await t.test('the catastrophic workflow is not run, with the reason; the others match; ingest keeps answering', async (t) => {
    let ticks = 0;
    const interval = setInterval(() => (ticks += 1), 10);
    const hostile = delivery(pushPayload({ after: sha, ref: 'refs/heads/topic', message: MESSAGE }), { secret });
    const first = h.pipeline.ingestDelivery(hostile);
    // Sent while the first is being matched: other pushes of the same lock, and of no lock at all.
    const meanwhile = [
      delivery(pushPayload({ after: sha, ref: 'refs/heads/other', message: 'fix: typo' }), { secret }),
      delivery(pushPayload({ after: sha, ref: 'refs/heads/third', message: MESSAGE }), { secret }),
      delivery(pushPayload({ after: 'd'.repeat(40), ref: 'refs/heads/topic' }), { secret }),
    ];
    const others = await Promise.all(meanwhile.map((d) => h.pipeline.ingestDelivery(d)));
    const outcome = await first;
    clearInterval(interval);
    t.ok(ticks > 0, `the event loop kept running (${ticks} ticks)`);

    t.same([outcome.result, outcome.status, outcome.runIds.length], ['accepted', 'matched', 2], 'plain and shout run');
    const runs = (await db.pool.any(sql.unsafe`select workflow from runs where id = any(${sql.array([...outcome.runIds], 'uuid')}) order by workflow`)) as unknown as Array<{ workflow: string }>;
    t.same(runs.map((r) => r.workflow), ['plain', 'shout']);
    const match = (await deliveryRow(db, hostile.deliveryId))?.steps.find((s) => s.step === 'match');
    t.equal(match?.outcome, 'matched');
    for (const name of ['hostile', 'hostile-paths']) {
      t.match(match?.detail, new RegExp(`(^|; )${name}: indeterminate, ${TIMED_OUT.source}`), `${name} is recorded not run, with the reason`);
    }

    t.same(others.map((o) => [o.result, o.status]), [['accepted', 'matched'], ['accepted', 'matched'], ['accepted', 'no_lock_file']], 'the deliveries sent meanwhile are answered');
    const typo = (await deliveryRow(db, meanwhile[0]!.deliveryId))?.steps.find((s) => s.step === 'match')?.detail;
    t.match(typo, /hostile: no_match, commit message "fix: typo" does not match \/\(a\+\)\+\$\//, 'on another message the same expression is decided');
    t.match(typo, /shout: no_match/);
  });

  await t.test('an organization-wide registration with the catastrophic expression: recorded not run, the lock still matches', async (t) => {
    const libSha = 'e'.repeat(40);
    h.forge.putLock(libSha, [workflow('audit', [trig.push({ repositories: ['acme/*'], commitMessage: HOSTILE })])]);
    const registered = await h.pipeline.ingestDelivery(delivery(pushPayload({ after: libSha, repository: 'acme/lib' }), { secret }));
    t.equal(registered.status, 'no_match', 'its own push: "Initial commit" does not end in "a", decided in time');
    t.equal(await count(db, 'registrations', sql.fragment`repository = 'acme/lib' and global`), 1, 'registered');
    await db.pool.query(sql.unsafe`update sources set org_wide_workflow_repositories = '{acme/lib}', org_wide_source_repositories = '{*}' where id = ${source.id}`);
    h.pipeline.sources.clear();
    const d = delivery(pushPayload({ after: sha, ref: 'refs/heads/org', message: MESSAGE }), { secret });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.same([outcome.status, outcome.runIds.length], ['matched', 2], 'plain and shout of the own lock');
    const detail = (await deliveryRow(db, d.deliveryId))?.steps.find((s) => s.step === 'match')?.detail;
    t.match(detail, new RegExp(`acme/lib:audit: indeterminate, ${TIMED_OUT.source}`));
  });
});
