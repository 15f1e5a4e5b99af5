// svc-admin approvals list/approve/reject in-process (runCli) against a real orchestrator database:
// holds are listed newest first with run, level, job, context, status, outcome, expiry and votes
// (ignored ones with their reason), filtered by --run and --pending; an operator decides as
// --actor (`via: admin`) under the hold's approval rule — an approver releases or cancels the run,
// anyone else exits 1 with the reason — and bad usage exits 2.
import { join } from 'node:path';
import t from 'tap';
import { ORCHESTRATOR_MIGRATIONS_DIR, ORCHESTRATOR_MIGRATIONS_TABLE } from '../../../kernel/orchestrator/app.ts';
import { ensureHold } from '../../../kernel/orchestrator/run-control/approvals.ts';
import { migrate, sql, type DatabasePool } from '../../../kernel/services/db/index.ts';
import { eachDatabase, testLogger } from '../../fixtures/db.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';
import { insertRun, runRow } from '../../fixtures/runs.ts';

const BIN = join(REPO_ROOT, 'bin/svc-admin.ts');
const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], HOME: process.env['HOME'], ...extra });
const ALICE_ONLY = [{ users: ['alice'], teams: [], roles: [], count: 1 }];

/** A run held at workflow level for alice's approval (as run creation leaves it). */
async function heldRun(pool: DatabasePool, orgId: string): Promise<{ runId: string; holdId: string }> {
  const run = await insertRun(pool, { orgId, status: 'held', jobs: [{ name: 'build', status: 'waiting' }, { name: 'test', needs: ['build'] }] });
  const hold = await ensureHold(pool, { orgId, runId: run.runId, jobId: null, level: 'workflow', clauses: ALICE_ONLY, reason: 'production deploy' });
  return { runId: run.runId, holdId: hold.id };
}

t.test('approvals list, approve, reject', async (t) => {
  await eachDatabase(t, async (t, db) => {
    await migrate(db.pool, { dir: ORCHESTRATOR_MIGRATIONS_DIR, table: ORCHESTRATOR_MIGRATIONS_TABLE, logger: testLogger });
    const admin = (...args: string[]) => runCli(BIN, ['approvals', ...args], { env: env({ SVC_DATABASE_URL: db.url }) });

    const first = await heldRun(db.pool, 'acme');
    const second = await heldRun(db.pool, 'other');
    // A job waiting for a secret context's reviewers, with an expiry.
    const third = await insertRun(db.pool, { orgId: 'acme', jobs: [{ name: 'deploy', status: 'waiting' }] });
    await db.pool.query(sql.unsafe`update jobs set status = 'held' where id = ${third.jobs['deploy']!.id}`);
    const contextHold = await ensureHold(db.pool, {
      orgId: 'acme',
      runId: third.runId,
      jobId: third.jobs['deploy']!.id,
      level: 'context',
      context: 'prod',
      clauses: [{ users: ['carol'], teams: [], roles: [], count: 1 }],
      timeoutSeconds: 3600,
    });

    await t.test('list: every hold newest first, one header line each; --json with votes; --run and --pending', async (t) => {
      const text = await admin('list');
      t.equal(text.code, 0, text.stderr);
      const lines = text.stdout.trimEnd().split('\n');
      t.equal(lines.length, 3);
      t.same(lines.map((l) => l.split('  ')[0]), [contextHold.id, second.holdId, first.holdId]);
      t.match(lines[0], new RegExp(`^${contextHold.id}  run ${third.runId} \\(queued\\)  org=acme  ci  context deploy \\(prod\\)  pending  expires \\d{4}-\\d\\d-\\d\\dT`));
      t.match(lines[2], new RegExp(`^${first.holdId}  run ${first.runId} \\(held\\)  org=acme  ci  workflow  pending$`));

      const json = await admin('list', '--json');
      t.equal(json.code, 0, json.stderr);
      const { holds } = JSON.parse(json.stdout) as { holds: Array<Record<string, unknown>> };
      t.same(Object.keys(holds[0]!).sort(), ['context', 'createdAt', 'decidedBy', 'expiresAt', 'holdId', 'job', 'level', 'orgId', 'outcome', 'reason', 'repository', 'runId', 'runStatus', 'status', 'step', 'votes', 'workflow'].sort());
      t.match(holds[0], { holdId: contextHold.id, level: 'context', job: 'deploy', context: 'prod', status: 'pending', outcome: null, votes: [] });
      t.ok(typeof holds[0]!['expiresAt'] === 'string', 'expires_at of a hold with a timeout');
      t.match(holds[2], { holdId: first.holdId, runId: first.runId, level: 'workflow', job: null, reason: 'production deploy', expiresAt: null });

      const one = JSON.parse((await admin('list', '--run', first.runId, '--json')).stdout) as { holds: Array<{ holdId: string }> };
      t.same(one.holds.map((h) => h.holdId), [first.holdId], '--run');
      t.equal((await admin('list', '--run', 'nope')).code, 2, '--run must be a run id');
      const none = await admin('list', '--run', '0b7c5b0e-0000-4000-8000-000000000000');
      t.equal(none.code, 0);
      t.equal(none.stdout, 'no approval holds\n');
    });

    await t.test('approve: someone else exits 1 with the reason (kept as a vote); the approver releases the run', async (t) => {
      const refused = await admin('approve', first.runId, '--actor', 'bob');
      t.equal(refused.code, 1);
      t.match(refused.stderr, /SVC_ERR_CLI_APPROVAL_NOT_COUNTED: not counted: bob may not decide this workflow hold: it needs 1 of users alice/);
      t.equal((await runRow(db.pool, first.runId)).status, 'held');

      const approved = await admin('approve', first.runId, '--actor', 'alice', '--comment', 'window open');
      t.equal(approved.code, 0, approved.stderr);
      t.match(approved.stdout, new RegExp(`^the run: approved\\nrun ${first.runId}: (queued|running)\\n$`));
      t.not((await runRow(db.pool, first.runId)).status, 'held');

      const listed = await admin('list', '--run', first.runId);
      t.equal(listed.code, 0, listed.stderr);
      const lines = listed.stdout.trimEnd().split('\n');
      t.match(lines[0], /workflow  approved  approved by alice$/);
      t.match(lines[1], /^    \S+  approve by bob via admin  ignored: bob may not decide this workflow hold/);
      t.match(lines[2], /^    \S+  approve by alice via admin  "window open"$/);
      const { holds } = JSON.parse((await admin('list', '--run', first.runId, '--json')).stdout) as { holds: Array<{ votes: unknown[]; decidedBy: string }> };
      t.equal(holds[0]!.decidedBy, 'alice');
      t.match(holds[0]!.votes, [
        { actor: 'bob', decision: 'approve', via: 'admin', counted: false, ignoredReason: /may not decide/ },
        { actor: 'alice', decision: 'approve', via: 'admin', counted: true, ignoredReason: null, comment: 'window open' },
      ]);

      const pending = JSON.parse((await admin('list', '--pending', '--json')).stdout) as { holds: Array<{ holdId: string }> };
      t.same(pending.holds.map((h) => h.holdId), [contextHold.id, second.holdId], '--pending leaves out the decided hold');

      const again = await admin('approve', first.runId, '--actor', 'alice', '--json');
      t.equal(again.code, 1);
      t.match(JSON.parse(again.stdout), { error: { code: 'SVC_ERR_CLI_APPROVAL_NOT_COUNTED', message: /nothing on run .* awaits approval: its workflow hold is approved/ } });
    });

    await t.test('reject --json: the run of any org ends cancelled with the reason', async (t) => {
      const res = await admin('reject', second.runId, '--actor', 'alice', '--comment', 'not now', '--json');
      t.equal(res.code, 0, res.stderr);
      t.match(JSON.parse(res.stdout), { runId: second.runId, runStatus: 'cancelled', decisions: [{ level: 'workflow', status: 'rejected', counted: true }] });
      const row = await runRow(db.pool, second.runId);
      t.equal(row.status, 'cancelled');
      t.match(row.reason, /rejected by alice: not now/);
    });

    await t.test('usage errors exit 2; an unknown run exits 1', async (t) => {
      t.equal((await admin('approve', first.runId)).code, 2, 'missing --actor');
      t.equal((await admin('approve', first.runId, '--actor', ' ')).code, 2, 'blank --actor');
      t.equal((await admin('reject', 'nope', '--actor', 'alice')).code, 2, 'not a run id');
      t.equal((await admin('approve', third.runId, '--actor', 'carol', '--comment', 'x'.repeat(2001))).code, 2, 'comment too long');
      const unknown = await admin('approve', '0b7c5b0e-0000-4000-8000-000000000000', '--actor', 'alice');
      t.equal(unknown.code, 1);
      t.match(unknown.stderr, /SVC_ERR_RUN_NOT_FOUND/);
      const noDb = await runCli(BIN, ['approvals', 'list'], { env: env() });
      t.equal(noDb.code, 2, 'no database named');
      const pending = (await db.pool.oneFirst(sql.unsafe`select status from approval_holds where id = ${contextHold.id}`)) as string;
      t.equal(pending, 'pending', 'refusals decided nothing');
    });

    await t.test('--job decides the holds of that job only', async (t) => {
      const res = await admin('approve', third.runId, '--actor', 'carol', '--job', 'deploy');
      t.equal(res.code, 0, res.stderr);
      t.match(res.stdout, /^job deploy \(context prod\): approved\n/);
      const job = (await db.pool.oneFirst(sql.unsafe`select status from jobs where id = ${third.jobs['deploy']!.id}`)) as string;
      t.not(job, 'held', 'the job goes back through its gates');
    });
  });
});
