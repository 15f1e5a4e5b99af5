// Approval holds end to end with real processes: svc-relay and svc-orchestrator on real
// PostgreSQL, the fake GitHub API serving each pull request's lock at its head sha, an org from
// `svc-admin relay org create`, a github source from `svc-admin source add github`, and signed
// GitHub-shaped `pull_request` and `issue_comment` webhooks posted to the relay. Every pull
// request's workflow needs one approval by alice (a workflow-level hold). Checked: the run is
// held and nothing is queued while it waits; `/svc approve` from someone else is recorded and
// ignored; two concurrent approvals by alice release the run once (the status feed shows one
// `queued` for the run and one per job); `/svc reject` cancels; an unanswered hold expires (its
// time moved in the database, not waited out); an approval after a cancel starts nothing. The
// comment deliveries are in the delivery log as `approval_command`. "Nothing moved" is read after
// two whole run-control passes, counted on the orchestrator's metrics, never after a sleep.
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { LockApproval } from '../../schemas/lock.ts';
import { buildLock, serializeLock } from '../../workflow/lock/lock-file.ts';
import { sql } from '../../kernel/services/db/index.ts';
import { sourcePointerKey } from '../../kernel/orchestrator/ingest/steps/caches.ts';
import { FilesystemStorage } from '../../plugins/storage/filesystem/index.ts';
import { eachDatabase } from '../fixtures/db.ts';
import { generateAppKeyPair, startFakeGithub } from '../fixtures/fake-github.ts';
import { morePasses, RUN_CONTROL_PASSES } from '../fixtures/passes.ts';
import { issueCommentPayload, pullRequestPayload, SHA_B } from '../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../fixtures/locks.ts';
import { REPO_ROOT, runProgram, startProgram, type StartedProgram } from '../fixtures/programs.ts';
import { until } from '../fixtures/runs.ts';

t.setTimeout(1_200_000);

const APP_ID = '4343';
const INSTALLATION = '99';
const ORG = 'acme';
const REPOSITORY = 'acme/app';
const keys = generateAppKeyPair();

const ciWorkflow = () => workflow('ci', [trig.pr()], [job('build'), job('test')]);

/** Workflow `ci` (jobs build and test) on pull requests, held until alice approves. */
function heldLock(extra: Partial<LockApproval> = {}): string {
  const approval: LockApproval = { clauses: [{ users: ['alice'], teams: [], roles: [], count: 1 }], when: 'always', reason: 'e2e approval', ...extra };
  return serializeLock(buildLock({ source: '.svc/workflows/*.ts#default', workflows: [{ ...ciWorkflow(), approval }] }));
}

const shaOf = (label: string) => createHash('sha1').update(`approvals-e2e:${label}`).digest('hex');

interface HoldRow {
  id: string;
  level: string;
  job_id: string | null;
  status: string;
  outcome: string | null;
  decided_by: string | null;
  expires: boolean;
}
interface VoteRow {
  actor: string;
  decision: string;
  via: string;
  counted: boolean;
  ignored_reason: string | null;
  hold_id: string | null;
}
interface RunRow {
  status: string;
  reason: string | null;
  cancelled_by: string | null;
}

await eachDatabase(t, async (t, db) => {
  const root = await mkdtemp(join(tmpdir(), 'svc-e2e-approvals-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const fake = await startFakeGithub({ appId: APP_ID, publicKey: keys.publicKey });
  t.teardown(() => fake.close());
  fake.addInstallation(INSTALLATION, [REPOSITORY]);
  fake.addCommit(REPOSITORY, SHA_B, { files: { '.svc/svc.lock.json': heldLock(), 'README.md': 'base' } });

  const relayDb = await db.extraDatabase();
  const started: StartedProgram[] = [];
  t.teardown(async () => {
    for (const p of started.reverse()) await p.stop().catch(() => undefined);
  });
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, SVC_SERVER_LOG_LEVEL: 'warn' };
  delete baseEnv['SVC_PLATFORM_URL'];
  delete baseEnv['SVC_PLATFORM_TOKEN'];

  const relayEnv = { ...baseEnv, SVC_RELAY_DATABASE_URL: relayDb, SVC_RELAY_PORT: '0', SVC_RELAY_HOST: '127.0.0.1', SVC_DATA_DIR: join(root, 'relay') };
  const relay = await startProgram(join(REPO_ROOT, 'bin/svc-relay.ts'), 'svc-relay', { env: relayEnv, readyTimeoutMs: 60_000 });
  started.push(relay);
  const relayUrl = relay.url;
  const relayAdmin = (args: string[]) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: relayEnv, timeoutMs: 60_000 });

  const org = await relayAdmin(['relay', 'org', 'create', ORG, '--json']);
  t.equal(org.code, 0, org.stderr);
  const platformToken = (JSON.parse(org.stdout) as { token: string }).token;
  const patOf = async (user: string): Promise<string> => {
    const out = await relayAdmin(['relay', 'pat', 'create', ORG, '--user', user, '--json']);
    if (out.code !== 0) throw new Error(`svc-admin relay pat create failed: ${out.stderr}`);
    return (JSON.parse(out.stdout) as { token: string }).token;
  };

  // The workflow's source is already cached (its pointer is in the orchestrator's storage): runs
  // get no build job, so an approved run's jobs go straight to `queued` (there is no agent here
  // to run a build they would wait for).
  const storageRoot = join(root, 'storage');
  const storage = new FilesystemStorage({ root: storageRoot });
  await storage.init();
  await storage.put(sourcePointerKey(ORG, ciWorkflow().contentHash), Buffer.from('sha256:e2e-approvals'));

  const orchEnv = {
    ...baseEnv,
    SVC_DATABASE_URL: db.url,
    SVC_DATA_DIR: join(root, 'orch'),
    SVC_STORAGE_TYPE: 'filesystem',
    SVC_STORAGE_FS_PATH: storageRoot,
    SVC_SECRET_KEY: randomBytes(32).toString('base64'),
    SVC_SERVER_PORT: '0',
    SVC_SERVER_HOST: '127.0.0.1',
    SVC_PLATFORM_URL: relayUrl,
    SVC_PLATFORM_TOKEN: platformToken,
    SVC_INSTANCE_ID: 'e2e-orch-approvals',
  };
  const admin = (args: string[]) => runProgram(join(REPO_ROOT, 'bin/svc-admin.ts'), args, { env: orchEnv, timeoutMs: 60_000 });

  const keyFile = join(root, 'app.pem');
  await writeFile(keyFile, keys.privateKeyPem, { mode: 0o600 });
  const added = await admin(['source', 'add', 'github', '--org', ORG, '--app-id', APP_ID, '--private-key-file', keyFile, '--setting', `apiBaseUrl=${fake.url}`, '--json']);
  t.equal(added.code, 0, added.stderr);
  const source = JSON.parse(added.stdout) as { source: { id: string }; secret: string; webhookUrl: string };

  const orchestrator = await startProgram(join(REPO_ROOT, 'bin/svc-orchestrator.ts'), 'svc-orchestrator', { env: orchEnv, readyTimeoutMs: 60_000 });
  started.push(orchestrator);

  const pool = db.pool;
  const WAIT = 90_000;
  /** Two whole passes of the run-control worker (the one that releases, admits and expires) from now. */
  const twoPasses = () => morePasses(orchestrator.url, RUN_CONTROL_PASSES);

  /** POST as GitHub does: its header names, the App as the hook target, HMAC of the exact bytes. */
  const post = async (event: string, payload: unknown, deliveryId = randomUUID()) => {
    const body = Buffer.from(JSON.stringify(payload));
    const res = await fetch(source.webhookUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'GitHub-Hookshot/e2e',
        'X-GitHub-Event': event,
        'X-GitHub-Delivery': deliveryId,
        'X-GitHub-Hook-ID': '1',
        'X-GitHub-Hook-Installation-Target-ID': APP_ID,
        'X-GitHub-Hook-Installation-Target-Type': 'integration',
        'X-Hub-Signature-256': `sha256=${createHmac('sha256', source.secret).update(body).digest('hex')}`,
      },
      body,
    });
    return { status: res.status, body: await res.text(), deliveryId };
  };
  /** The relay learns the source from the orchestrator's hello; until then it may answer 404. */
  const postAccepted = (event: string, payload: unknown) =>
    until(
      `the relay to accept a ${event}`,
      async () => {
        const res = await post(event, payload);
        return res.status === 200 ? res : undefined;
      },
      WAIT,
      300,
    );

  const delivery = async (deliveryId: string) =>
    (await pool.maybeOne(sql.unsafe`
      select status, message, run_ids::text[] as run_ids, steps from webhook_deliveries where delivery_id = ${deliveryId}`)) as {
      status: string;
      message: string | null;
      run_ids: string[];
      steps: Array<{ step: string; outcome: string; detail?: string }>;
    } | null;
  const runOf = async (runId: string) => (await pool.one(sql.unsafe`select status, reason, cancelled_by from runs where id = ${runId}`)) as unknown as RunRow;
  const holdsOf = async (runId: string) =>
    (await pool.any(sql.unsafe`
      select id::text as id, level, job_id::text as job_id, status, outcome, decided_by, expires_at is not null as expires
      from approval_holds where run_id = ${runId} order by created_at, id`)) as unknown as HoldRow[];
  const votesOf = async (runId: string) =>
    (await pool.any(sql.unsafe`
      select actor, decision, via, counted, ignored_reason, hold_id::text as hold_id from approval_votes where run_id = ${runId} order by created_at, id`)) as unknown as VoteRow[];
  /** The run's own status changes, oldest first. */
  const runFeed = async (runId: string) => (await pool.anyFirst(sql.unsafe`select status from run_status_feed where run_id = ${runId} and job_id is null order by seq`)) as readonly string[];
  /** Per job: its name and every status it was written with, oldest first. */
  const jobFeed = async (runId: string) =>
    (await pool.any(sql.unsafe`
      select j.id::text as id, j.name, j.kind, j.status,
             coalesce((select array_agg(f.status order by f.seq) from run_status_feed f where f.job_id = j.id), '{}')::text[] as history
      from jobs j where j.run_id = ${runId} order by j.name`)) as unknown as Array<{ id: string; name: string; kind: string; status: string; history: string[] }>;
  const queuedJobRows = async (runId: string) => Number(await pool.oneFirst(sql.unsafe`select count(*) from run_status_feed where run_id = ${runId} and job_id is not null and status = 'queued'`));

  /** Opens pull request `number` on a head of its own (its lock served there); resolves with its run. */
  const openPr = async (number: number, lock: string = heldLock()): Promise<{ runId: string; deliveryId: string; headSha: string }> => {
    const headSha = shaOf(`pr-${number}`);
    fake.addCommit(REPOSITORY, headSha, { parent: SHA_B, files: { '.svc/svc.lock.json': lock, 'README.md': `pr ${number}` } });
    const res = await postAccepted('pull_request', pullRequestPayload({ number, headSha, headRef: `feature-${number}` }));
    const record = await until(
      `the pull request #${number} delivery to make a run`,
      async () => {
        const d = await delivery(res.deliveryId);
        if (d === null || d.status === 'processing') return undefined;
        if (d.status !== 'matched') throw new Error(`pull request #${number}: delivery ${d.status}: ${d.message ?? ''}`);
        return d.run_ids.length > 0 ? d : undefined;
      },
      WAIT,
      100,
    );
    if (record.run_ids.length !== 1) throw new Error(`pull request #${number} made ${record.run_ids.length} runs`);
    return { runId: record.run_ids[0]!, deliveryId: res.deliveryId, headSha };
  };

  /** Waits until the run is held with one pending workflow hold. */
  const waitHeld = (runId: string) =>
    until(
      `run ${runId} held with a pending hold`,
      async () => {
        const run = await runOf(runId);
        const holds = await holdsOf(runId);
        return run.status === 'held' && holds.length === 1 && holds[0]!.status === 'pending' ? holds[0]! : undefined;
      },
      WAIT,
      100,
    );

  let commentId = 5000;
  const commentDeliveries: Array<{ deliveryId: string; author: string; command: string }> = [];
  /** Posts a pull-request comment (a fresh comment id: a body of its own); resolves once it was processed. */
  const postComment = async (number: number, author: string, body: string) => {
    const res = await post('issue_comment', issueCommentPayload(body, { number, author, commentId: ++commentId }));
    if (res.status !== 200) throw new Error(`the relay answered ${res.status} to a comment: ${res.body}`);
    commentDeliveries.push({ deliveryId: res.deliveryId, author, command: body.split(/\s+/)[1] ?? '' });
    return res.deliveryId;
  };
  /** The command's recorded outcome, once its delivery is recorded `approval_command`. */
  const commandOutcome = async (deliveryId: string): Promise<string> => {
    await until(
      `comment delivery ${deliveryId} recorded`,
      async () => {
        const d = await delivery(deliveryId);
        if (d === null || d.status === 'processing') return undefined;
        if (d.status !== 'approval_command') throw new Error(`comment delivery ${deliveryId} recorded ${d.status}: ${d.message ?? ''}`);
        return d;
      },
      WAIT,
      100,
    );
    const row = (await pool.one(sql.unsafe`
      select outcome, processed_at is not null as processed from approval_commands where delivery_id = ${deliveryId}`)) as { outcome: string | null; processed: boolean };
    if (row.outcome === null || !row.processed) throw new Error(`approval command ${deliveryId} recorded without an outcome`);
    return row.outcome;
  };

  await t.test('a pull request whose workflow needs approval: held, nothing queued while it waits', async (t) => {
    const { runId } = await openPr(101);
    const hold = await waitHeld(runId);
    t.equal(hold.level, 'workflow');
    t.equal(hold.job_id, null, 'a workflow-level hold (no job)');
    t.equal(hold.expires, false, 'no timeoutSeconds: the hold never expires');
    // Give the run-control worker, the only one that could release it, two whole passes to move it
    // (the dispatcher takes queued jobs only).
    await twoPasses();
    t.equal((await runOf(runId)).status, 'held', 'still held after two run-control passes');
    const holds = await holdsOf(runId);
    t.same(holds.map((h) => h.status), ['pending'], 'one pending hold');
    const jobs = await jobFeed(runId);
    t.ok(jobs.some((j) => j.kind === 'job' && j.name === 'build') && jobs.some((j) => j.kind === 'job' && j.name === 'test'), 'the lock\'s jobs exist');
    t.ok(jobs.every((j) => j.status === 'waiting'), `every job waiting: ${jobs.map((j) => `${j.name}=${j.status}`).join(', ')}`);
    t.equal(await queuedJobRows(runId), 0, 'no job was ever queued');
    t.same(await runFeed(runId), ['held'], 'the run was written held and never moved');
    t.same(await votesOf(runId), [], 'no votes');
  });

  await t.test('/svc approve from someone the rule does not name: recorded, ignored with a reason, still held', async (t) => {
    const { runId } = await openPr(102);
    const hold = await waitHeld(runId);
    const outcome = await commandOutcome(await postComment(102, 'mallory', '/svc approve lgtm'));
    t.match(outcome, new RegExp(`^run ${runId}: ignored: `), 'the command outcome says it was ignored');
    t.match(outcome, /mallory may not decide this workflow hold/);
    t.match(outcome, /alice/, 'the outcome names who may approve');
    const votes = await votesOf(runId);
    t.equal(votes.length, 1, 'the vote is stored');
    t.match(votes[0], { actor: 'mallory', decision: 'approve', via: 'comment', counted: false, hold_id: hold.id });
    t.match(votes[0]!.ignored_reason ?? '', /mallory may not decide .*alice/, `ignored_reason names the approver: ${votes[0]!.ignored_reason}`);
    await twoPasses();
    t.equal((await runOf(runId)).status, 'held', 'still held');
    t.same((await holdsOf(runId)).map((h) => h.status), ['pending'], 'the hold is still pending');
    t.equal(await queuedJobRows(runId), 0, 'no job queued');
  });

  await t.test('two concurrent /svc approve by alice (two deliveries): the run leaves held once', async (t) => {
    const { runId } = await openPr(103);
    const hold = await waitHeld(runId);
    const [first, second] = await Promise.all([postComment(103, 'alice', '/svc approve ship it'), postComment(103, 'alice', '/svc approve')]);
    t.not(first, second, 'two deliveries');
    const outcomes = await Promise.all([commandOutcome(first), commandOutcome(second)]);
    const approved = outcomes.filter((o) => o === `run ${runId}: the run: approved`);
    t.equal(approved.length, 1, `exactly one command released the run: ${JSON.stringify(outcomes)}`);
    const other = outcomes.find((o) => o !== approved[0]) ?? '';
    t.match(other, /ignored: /, `the other command is recorded as ignored: ${other}`);

    const holds = await holdsOf(runId);
    t.equal(holds.length, 1);
    t.match(holds[0], { id: hold.id, status: 'approved', outcome: 'approved by alice', decided_by: 'alice' });

    // The jobs of the lock get queued (there is no agent: they stay queued).
    const jobs = await until(
      'the jobs of the approved run queued',
      async () => {
        const rows = await jobFeed(runId);
        const work = rows.filter((j) => j.kind === 'job');
        return work.length === 2 && work.every((j) => j.status === 'queued') ? rows : undefined;
      },
      WAIT,
      100,
    );
    // Both commands are processed; any duplicate release a pass would make shows before counting.
    await twoPasses();
    const feed = await runFeed(runId);
    t.equal(feed[0], 'held', 'the run was written held');
    t.equal(feed.filter((s) => s === 'queued').length, 1, `exactly one queued row for the run after held: ${feed.join(' → ')}`);
    t.equal((await runOf(runId)).status, 'queued', 'the run is queued');
    const after = await jobFeed(runId);
    t.same(after.map((j) => j.name).sort(), jobs.map((j) => j.name).sort());
    for (const j of after) {
      const queued = j.history.filter((s) => s === 'queued').length;
      if (j.kind === 'job') t.equal(queued, 1, `job ${j.name} queued exactly once: ${j.history.join(' → ')}`);
      else t.ok(queued <= 1, `${j.kind} job ${j.name} queued at most once: ${j.history.join(' → ')}`);
    }

    // Both votes: alice's first counts and releases; the second is recorded (as a vote that
    // found the hold approved, or as the command's outcome when its lookup came after the release).
    const votes = await votesOf(runId);
    const counted = votes.filter((v) => v.counted);
    t.equal(counted.length, 1, 'one counted vote');
    t.match(counted[0], { actor: 'alice', decision: 'approve', via: 'comment', hold_id: hold.id });
    for (const v of votes.filter((v) => !v.counted)) {
      t.match(v, { actor: 'alice', decision: 'approve', via: 'comment' });
      t.match(v.ignored_reason ?? '', /hold is approved/, `an uncounted vote says why: ${v.ignored_reason}`);
    }
    t.ok(votes.length >= 1 && votes.length <= 2, `one or two votes stored (${votes.length})`);
    const commands = (await pool.any(sql.unsafe`
      select delivery_id, author, command, outcome from approval_commands where delivery_id = any(${sql.array([first, second], 'text')})`)) as unknown as Array<{ author: string; command: string; outcome: string | null }>;
    t.equal(commands.length, 2, 'both commands are recorded');
    t.ok(commands.every((c) => c.author === 'alice' && c.command === 'approve' && c.outcome !== null), 'each with its outcome');
  });

  await t.test('/svc reject with a comment: the run is cancelled with the reason', async (t) => {
    const { runId } = await openPr(104);
    const hold = await waitHeld(runId);
    const outcome = await commandOutcome(await postComment(104, 'alice', '/svc reject not today'));
    t.equal(outcome, `run ${runId}: the run: rejected`);
    const run = await until(
      `run ${runId} cancelled`,
      async () => {
        const r = await runOf(runId);
        return r.status === 'cancelled' ? r : undefined;
      },
      WAIT,
      100,
    );
    t.match(run.reason ?? '', /rejected by alice: not today/, `reason: ${run.reason}`);
    t.equal(run.reason, 'Approval rejected by alice: not today');
    t.equal(run.cancelled_by, 'alice');
    t.match((await holdsOf(runId))[0], { id: hold.id, status: 'rejected', outcome: 'rejected by alice: not today', decided_by: 'alice' });
    const votes = await votesOf(runId);
    t.equal(votes.length, 1);
    t.match(votes[0], { actor: 'alice', decision: 'reject', via: 'comment', counted: true, hold_id: hold.id });
    t.equal(await queuedJobRows(runId), 0, 'no job was ever queued');
    const jobs = await jobFeed(runId);
    t.ok(jobs.every((j) => j.status === 'cancelled'), `every job cancelled: ${jobs.map((j) => `${j.name}=${j.status}`).join(', ')}`);
    t.notOk((await runFeed(runId)).includes('queued'), 'the run never queued');
  });

  await t.test('a hold with timeoutSeconds: 60 nobody answers expires and cancels the run', async (t) => {
    const { runId } = await openPr(105, heldLock({ timeoutSeconds: 60 }));
    await waitHeld(runId);
    await twoPasses();
    t.equal((await runOf(runId)).status, 'held', 'not before its time');
    // Its minute passes: the hold is moved an hour back whole (its timeout stays 60 s).
    await pool.query(sql.unsafe`UPDATE approval_holds SET created_at = created_at - interval '1 hour', expires_at = expires_at - interval '1 hour' WHERE run_id = ${runId}`);
    const run = await until(
      `run ${runId} cancelled by the expiry`,
      async () => {
        const r = await runOf(runId);
        return r.status === 'cancelled' ? r : undefined;
      },
      WAIT,
      200,
    );
    t.match(run.reason ?? '', /^Approval expired/, `reason: ${run.reason}`);
    t.equal(run.cancelled_by, 'svc:approval-timeout');
    const holds = await holdsOf(runId);
    t.equal(holds.length, 1);
    t.match(holds[0], { level: 'workflow', status: 'expired', expires: true, decided_by: 'svc:approval-timeout' });
    t.match(holds[0]!.outcome ?? '', /^expired: no decision within 60 s/);
    t.same(await runFeed(runId), ['held', 'cancelled'], 'held, then cancelled: never queued');
    t.equal(await queuedJobRows(runId), 0, 'no job was ever queued');
    t.same(await votesOf(runId), [], 'nobody voted');
    // An approval after the expiry starts nothing.
    const outcome = await commandOutcome(await postComment(105, 'alice', '/svc approve too late'));
    t.match(outcome, /ignored/, `the late approval is ignored: ${outcome}`);
    await twoPasses();
    t.equal((await runOf(runId)).status, 'cancelled');
    t.equal(await queuedJobRows(runId), 0);
  });

  await t.test('cancel a held run through the relay, then approve: nothing starts', async (t) => {
    const { runId } = await openPr(106);
    const hold = await waitHeld(runId);
    const carol = await patOf('carol');
    const cancelled = await fetch(`${relayUrl}/orgs/${ORG}/runs/${runId}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${carol}` } });
    const cancelBody = await cancelled.text();
    t.equal(cancelled.status, 200, cancelBody);
    const run = await until(
      `run ${runId} cancelled`,
      async () => {
        const r = await runOf(runId);
        return r.status === 'cancelled' ? r : undefined;
      },
      WAIT,
      100,
    );
    t.equal(run.cancelled_by, 'carol');
    t.match((await holdsOf(runId))[0], { id: hold.id, status: 'cancelled', decided_by: 'carol' });

    // alice's comment: the pull request has no run awaiting a decision any more.
    const outcome = await commandOutcome(await postComment(106, 'alice', '/svc approve'));
    t.match(outcome, /ignored/, `the comment is recorded as ignored: ${outcome}`);
    // The same approval through the relay (the dashboard's route, as alice): recorded, not counted,
    // with the reason naming the cancelled hold.
    const alice = await patOf('alice');
    const res = await fetch(`${relayUrl}/orgs/${ORG}/runs/${runId}/approve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ comment: 'after the cancel' }),
    });
    const result = JSON.parse(await res.text()) as { runStatus: string; decisions: Array<{ counted: boolean; ignoredReason?: string; status: string }>; message: string };
    t.equal(res.status, 200, JSON.stringify(result));
    t.equal(result.runStatus, 'cancelled');
    t.equal(result.decisions.length, 1);
    t.match(result.decisions[0], { counted: false, status: 'cancelled' });
    t.match(result.decisions[0]!.ignoredReason ?? '', /hold is cancelled/);

    const votes = await votesOf(runId);
    const dashboardVote = votes.find((v) => v.via === 'dashboard');
    t.match(dashboardVote, { actor: 'alice', decision: 'approve', counted: false, hold_id: hold.id });
    t.match(dashboardVote?.ignored_reason ?? '', /its workflow hold is cancelled/, `ignored_reason: ${dashboardVote?.ignored_reason}`);
    t.ok(votes.every((v) => !v.counted), 'no vote counted');
    for (const v of votes.filter((v) => v.via === 'comment')) t.match(v.ignored_reason ?? '', /cancelled/, 'a comment vote, if stored, names the cancelled hold');

    await twoPasses();
    t.equal((await runOf(runId)).status, 'cancelled', 'the run stays cancelled');
    t.equal((await holdsOf(runId))[0]!.status, 'cancelled', 'the hold stays cancelled');
    t.notOk((await runFeed(runId)).includes('queued'), 'the run never queued');
    t.equal(await queuedJobRows(runId), 0, 'no job was ever queued');
    t.ok((await jobFeed(runId)).every((j) => j.status === 'cancelled'), 'every job cancelled');
  });

  await t.test('the delivery log shows each comment delivery as approval_command', async (t) => {
    t.ok(commentDeliveries.length >= 6, `${commentDeliveries.length} comment deliveries`);
    const out = await admin(['deliveries', 'list', '--org', ORG, '--status', 'approval_command', '--limit', '100', '--json']);
    t.equal(out.code, 0, out.stderr);
    const listed = (JSON.parse(out.stdout) as { deliveries: Array<{ deliveryId: string; status: string; eventType: string | null; message: string | null; runIds: string[] }> }).deliveries;
    for (const c of commentDeliveries) {
      const d = listed.find((l) => l.deliveryId === c.deliveryId);
      t.ok(d, `delivery ${c.deliveryId} (${c.author} ${c.command}) is listed`);
      if (d === undefined) continue;
      t.equal(d.status, 'approval_command');
      t.equal(d.eventType, 'issue_comment');
      t.same(d.runIds, [], 'a command makes no run');
      t.match(d.message ?? '', new RegExp(`^/svc ${c.command} by ${c.author}: `), `message: ${d.message}`);
      const record = await delivery(c.deliveryId);
      const step = record?.steps.find((s) => s.outcome === 'approval_command');
      t.ok(step, 'a step of the record has outcome approval_command');
      t.match(step?.detail ?? '', new RegExp(`/svc ${c.command} by ${c.author}: `));
    }
  });
});
