// `svc approve` and `svc reject` in-process (runCli) through a real relay to a real orchestrator
// (real WebSocket link, real PostgreSQL), on runs pushed through the relay for a workflow that
// needs alice's approval: the approver releases or cancels the run (text and --json), anyone else
// exits 1 with the reason and the run stays held, a decision on a run nothing awaits exits 1, and
// usage errors exit 2.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { SHA_A } from '../../fixtures/github-payloads.ts';
import { heldWorkflow, pushHeldRun } from '../../fixtures/held-runs.ts';
import { ORG, OTHER_ORG, startPlatformStack } from '../../fixtures/platform-stack.ts';
import { runCli } from '../../fixtures/cli.ts';
import { REPO_ROOT } from '../../fixtures/programs.ts';


await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  stack.forge.putLock(SHA_A, [heldWorkflow()]);
  const home = await mkdtemp(join(tmpdir(), 'svc-approve-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: home };
  for (const name of ['SVC_PLATFORM_URL', 'SVC_TOKEN', 'SVC_ORG', 'SVC_PLATFORM_TOKEN']) delete baseEnv[name];
  const svc = (args: string[], env: Record<string, string> = {}) => runCli(join(REPO_ROOT, 'bin/svc.ts'), args, { env: { ...baseEnv, ...env } });
  const login = await svc(['login', '--token', await stack.pat('alice'), '--platform-url', stack.relayUrl]);
  t.equal(login.code, 0, login.stderr);
  const bob = await stack.pat('bob');
  const run = async (runId: string) => (await db.pool.one(sql.unsafe`select status, reason from runs where id = ${runId}`)) as { status: string; reason: string | null };
  const votes = async (runId: string) => (await db.pool.any(sql.unsafe`select actor, decision, via, comment, counted from approval_votes where run_id = ${runId} order by created_at, id`)) as Array<Record<string, unknown>>;

  await t.test('approve: someone else exits 1 with the reason; the approver releases the run', async (t) => {
    const { runId } = await pushHeldRun(stack);
    const refused = await svc(['approve', runId], { SVC_TOKEN: bob });
    t.equal(refused.code, 1);
    t.match(refused.stderr, /SVC_ERR_CLI_APPROVAL_NOT_COUNTED: not counted: bob may not decide this workflow hold: it needs 1 of users alice/);
    t.equal(refused.stdout, '');
    const refusedJson = await svc(['approve', runId, '--json'], { SVC_TOKEN: bob });
    t.equal(refusedJson.code, 1);
    t.match(JSON.parse(refusedJson.stdout), { error: { code: 'SVC_ERR_CLI_APPROVAL_NOT_COUNTED', message: /bob may not decide/ } });
    t.equal((await run(runId)).status, 'held', 'still held');

    const approved = await svc(['approve', runId, '--comment', 'ship it']);
    t.equal(approved.code, 0, approved.stderr);
    const lines = approved.stdout.trimEnd().split('\n');
    t.equal(lines[0], 'the run: approved');
    t.match(lines[1], new RegExp(`^run ${runId}: (queued|running)$`));
    t.not((await run(runId)).status, 'held');
    t.match(await votes(runId), [
      { actor: 'bob', via: 'cli', counted: false },
      { actor: 'bob', via: 'cli', counted: false },
      { actor: 'alice', decision: 'approve', via: 'cli', comment: 'ship it', counted: true },
    ]);

    const again = await svc(['approve', runId]);
    t.equal(again.code, 1, 'nothing awaits approval any more');
    t.match(again.stderr, /SVC_ERR_CLI_APPROVAL_NOT_COUNTED: not counted: nothing on run .* awaits approval: its workflow hold is approved \(approved by alice\)/);
  });

  await t.test('reject --json: the result, the run ends cancelled with the comment in the reason', async (t) => {
    const { runId } = await pushHeldRun(stack);
    const res = await svc(['reject', runId, '--comment', 'not from this branch', '--json']);
    t.equal(res.code, 0, res.stderr);
    const result = JSON.parse(res.stdout);
    t.match(result, { runId, runStatus: 'cancelled', message: 'the run: rejected', decisions: [{ level: 'workflow', status: 'rejected', counted: true, job: null }] });
    const row = await run(runId);
    t.equal(row.status, 'cancelled');
    t.match(row.reason, /rejected by alice: not from this branch/);
  });

  await t.test('usage errors exit 2; unknown run, another org and no login exit 1', async (t) => {
    const { runId } = await pushHeldRun(stack);
    t.equal((await svc(['approve', 'nope'])).code, 2, 'not a run id');
    t.equal((await svc(['reject'])).code, 2, 'missing run id');
    const long = await svc(['approve', runId, '--comment', 'x'.repeat(2001)]);
    t.equal(long.code, 2);
    t.match(long.stderr, /--comment is at most 2000 characters/);
    t.equal((await svc(['approve', runId, '--job', ''])).code, 2, 'empty --job');
    t.equal((await svc(['approve', runId, '--nope'])).code, 2, 'unknown flag');
    const unknown = await svc(['approve', '0b7c5b0e-0000-4000-8000-000000000000']);
    t.equal(unknown.code, 1);
    t.match(unknown.stderr, /SVC_ERR_RUNS_NOT_FOUND/);
    const other = await svc(['reject', runId, '--json'], { SVC_TOKEN: await stack.pat('mallory', OTHER_ORG) });
    t.equal(other.code, 1);
    t.match(JSON.parse(other.stdout), { error: { code: 'SVC_ERR_RELAY_AUTH_WRONG_ORG' } });
    const noLogin = await svc(['approve', runId], { XDG_CONFIG_HOME: join(home, 'empty') });
    t.equal(noLogin.code, 1);
    t.match(noLogin.stderr, /not logged in/);
    t.equal((await run(runId)).status, 'held', 'none of these decided anything');
    t.same(await votes(runId), []);
    const job = await svc(['approve', runId, '--job', 'build'], { SVC_ORG: ORG });
    t.equal(job.code, 1, '--job names a job without a hold: nothing counted');
    t.match(job.stderr, /SVC_ERR_CLI_APPROVAL_NOT_COUNTED: not counted: nothing on run/);
    t.equal((await run(runId)).status, 'held');
  });
});
