// Team and role approvers (issue 42 item 3; docs/run-control.md "Teams and roles"), on the real
// orchestrator and relay in-process, linked over the real WebSocket, on real PostgreSQL:
// - a rule needing two approvals from team release holds the run until two members approved;
//   the same member twice counts once; a person outside the team is refused with a reason naming
//   the team, and so is a token without a person; each decision is one audit record;
// - a role clause (`role('approver')`) is met by a person holding the role;
// - the relay's people directory reaches the orchestrator over the link, and a `/svc approve`
//   comment maps its forge author to a person through it (or is refused, saying why).
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import t from 'tap';
import type { LockWorkflow } from '../../../../schemas/lock.ts';
import { listAudit } from '../../../../kernel/orchestrator/audit/store.ts';
import { createAdminToken } from '../../../../kernel/orchestrator/admin-auth/index.ts';
import { runCli } from '../../../fixtures/cli.ts';
import { REPO_ROOT } from '../../../fixtures/programs.ts';
import { syncPeople } from '../../../../kernel/orchestrator/run-control/people.ts';
import { grantRole } from '../../../../kernel/relay/people/roles.ts';
import { mintPersonToken, upsertPerson } from '../../../../kernel/relay/people/store.ts';
import { queuePersonSync } from '../../../../kernel/relay/audit/record.ts';
import { sql } from '../../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../../fixtures/db.ts';
import { issueCommentPayload, pullRequestPayload, pushPayload, SHA_A, SHA_B } from '../../../fixtures/github-payloads.ts';
import { job, trig, workflow } from '../../../fixtures/locks.ts';
import { pushHeldRun } from '../../../fixtures/held-runs.ts';
import { ORG, startPlatformStack } from '../../../fixtures/platform-stack.ts';
import { until } from '../../../fixtures/runs.ts';
import { delivery, makeHarness } from '../ingest/harness.ts';

function gated(clause: { teams?: string[]; roles?: string[]; count: number }): LockWorkflow {
  return {
    ...workflow('ci', [trig.push({ branches: ['main'] }), trig.pr()], [job('build')]),
    approval: { clauses: [{ users: [], teams: clause.teams ?? [], roles: clause.roles ?? [], count: clause.count }], when: 'always', reason: 'release' },
  };
}

await eachDatabase(t, async (t, db) => {
  const stack = await startPlatformStack(t, db);
  stack.forge.putLock(SHA_A, [gated({ teams: ['release'], count: 2 })]);

  /** A person of the relay's people store with these groups, the approver role, and a token. */
  const person = async (login: string, groups: string[], provider = 'corp') => {
    const p = await upsertPerson(stack.relayDb, provider, { subject: `sub-${login}`, logins: [login], displayName: `${login[0]!.toUpperCase()}${login.slice(1)} Example`, groups });
    await grantRole(stack.relayDb, ORG, p.id, 'approver', 'test');
    const token = await mintPersonToken(stack.relayDb, { orgId: ORG, person: { id: p.id, login: p.login }, name: 'test', ttlSeconds: 3600, grantId: null, refresh: false });
    return { ...p, token: token.token };
  };
  const ann = await person('ann', ['release', 'eng']);
  const bob = await person('bob', ['release']);
  const carol = await person('carol', ['qa']);

  const decide = async (token: string, runId: string, decision: 'approve' | 'reject' = 'approve') => {
    const res = await fetch(`${stack.relayUrl}/v1/orgs/${ORG}/runs/${runId}/${decision}`, { method: 'POST', headers: { ...stack.auth(token), 'content-type': 'application/json' }, body: '{}' });
    return { status: res.status, body: (await res.json()) as { runStatus: string; message: string; decisions: Array<{ counted: boolean; status: string; ignoredReason?: string }> } };
  };
  const runStatus = async (runId: string) => (await db.pool.oneFirst(sql.unsafe`select status from runs where id = ${runId}`)) as string;

  await t.test('two approvals from team release: held until two members approved; an outsider is refused naming the team', async (t) => {
    const { runId } = await pushHeldRun(stack);

    const outsider = await decide(carol.token, runId);
    t.equal(outsider.status, 200, 'a decision the clause does not allow is an answer, not an error');
    t.equal(outsider.body.decisions[0]?.counted, false);
    t.match(outsider.body.message, /carol may not decide this workflow hold: it needs 2 of teams release; Carol Example is not in team release/);
    t.equal(await runStatus(runId), 'held');

    const first = await decide(ann.token, runId);
    t.equal(first.body.decisions[0]?.counted, true);
    t.equal(first.body.decisions[0]?.status, 'pending', 'one of two');
    t.match(first.body.message, /more approvals are needed/);
    const again = await decide(ann.token, runId);
    t.equal(again.body.decisions[0]?.status, 'pending', 'the same person twice counts once');
    t.equal(await runStatus(runId), 'held');

    const token = await stack.pat('release-bot');
    const tokenOnly = await decide(token, runId);
    t.equal(tokenOnly.body.decisions[0]?.counted, false, 'a token without a person has no teams');
    t.match(tokenOnly.body.message, /release-bot is not linked to a signed-in person, so no team or role can be checked/);

    const second = await decide(bob.token, runId);
    t.equal(second.body.decisions[0]?.status, 'approved');
    t.not(await runStatus(runId), 'held', 'released by the second member');
    const outcome = (await db.pool.oneFirst(sql.unsafe`select outcome from approval_holds where run_id = ${runId}`)) as string;
    t.equal(outcome, 'approved by ann, bob');

    const late = await decide(carol.token, runId);
    t.equal(late.body.decisions[0]?.counted, false, 'nothing pends any more');

    // One audit record per decision, with the person (or the token) who made it.
    const records = (await listAudit(db.pool, { org: ORG, action: 'run.approve' })).filter((e) => e.target === `run:${runId}`).reverse();
    t.same(
      records.map((e) => [e.actor.kind, e.actor.name, e.outcome]),
      [
        ['person', 'carol', 'refused'],
        ['person', 'ann', 'ok'],
        ['person', 'ann', 'ok'],
        ['token', 'release-bot', 'refused'],
        ['person', 'bob', 'ok'],
        ['person', 'carol', 'refused'],
      ],
    );
    t.equal(records[1]?.actor.id, ann.id, 'the person id is kept');
    t.match(records[0]?.detail, /not in team release/);
    t.equal(records[0]?.via, 'cli');
  });

  await t.test("a role clause: met by a person holding the role; the person's other roles do not count", async (t) => {
    // A commit of its own: the orchestrator caches a commit's lock.
    const sha = 'c'.repeat(40);
    stack.forge.putLock(sha, [gated({ roles: ['admin'], count: 1 })]);
    const dora = await person('dora', []);
    const { runId } = await stack.pushRun(randomUUID(), pushPayload({ after: sha, message: `role ${randomUUID()}` }));
    await until('the role-gated run held', async () => ((await runStatus(runId)) === 'held' ? true : undefined), 30_000, 50);
    const refused = await decide(ann.token, runId);
    t.match(refused.body.message, /it needs 1 of roles admin; Ann Example is without role admin/);
    await grantRole(stack.relayDb, ORG, dora.id, 'admin', 'test');
    const ok = await decide(dora.token, runId);
    t.equal(ok.body.decisions[0]?.status, 'approved');
  });

  await t.test('the people directory reaches the orchestrator over the link (whole org at connect, a person after a change)', async (t) => {
    const erin = await person('erin', ['release'], 'forge');
    await queuePersonSync(stack.relayDb, erin.id);
    const row = await until(
      'erin in the orchestrator people directory',
      async () =>
        ((await db.pool.maybeOne(sql.unsafe`select provider, login, teams, roles, disabled from people_directory where org_id = ${ORG} and person_id = ${erin.id}`)) as Record<string, unknown> | null) ?? undefined,
      15_000,
      100,
    );
    t.same(row, { provider: 'forge', login: 'erin', teams: ['release'], roles: ['approver'], disabled: false });
  });

  await t.test('relayed re-run and cancel, and relay-side records, reach the trail once; the admin route reads it', async (t) => {
    await grantRole(stack.relayDb, ORG, ann.id, 'developer', 'test');
    const { runId } = await stack.pushRun(randomUUID(), pushPayload({ message: `audit ${randomUUID()}` }));
    const post = (path: string) => fetch(`${stack.relayUrl}${path}`, { method: 'POST', headers: stack.auth(ann.token) });
    const cancelled = await post(`/orgs/${ORG}/runs/${runId}/cancel`);
    t.equal(cancelled.status, 200);
    const rerun = await post(`/orgs/${ORG}/runs/${runId}/rerun`);
    t.equal(rerun.status, 200);
    const { newRunId } = (await rerun.json()) as { newRunId: string };
    const refused = await fetch(`${stack.relayUrl}/orgs/${ORG}/runs/${runId}/cancel`, { method: 'POST', headers: stack.auth(carol.token) });
    t.equal(refused.status, 403, 'carol (approver only) may not cancel');
    const ofRun = async () => (await listAudit(db.pool, { org: ORG })).filter((e) => e.target === `run:${runId}`).reverse();
    const records = await until('the refusal from the relay outbox', async () => {
      const rows = await ofRun();
      return rows.length >= 3 ? rows : undefined;
    }, 15_000, 100);
    t.same(
      records.map((e) => [e.action, e.actor.kind, e.actor.name, e.outcome]),
      [
        ['run.cancel', 'person', 'ann', 'ok'],
        ['run.rerun', 'person', 'ann', 'ok'],
        ['run.cancel', 'person', 'carol', 'refused'],
      ],
      'one record each',
    );
    t.equal(records[1]?.detail, `new run ${newRunId}`);
    t.match(records[2]?.detail, /this needs the developer role in org acme/);

    // An operator's token created on the relay database: through the outbox to the orchestrator.
    const created = await runCli(join(REPO_ROOT, 'bin/svc-admin.ts'), ['relay', 'pat', 'create', ORG, '--user', 'zed', '--json', '--database-url', stack.relayDbUrl], { env: { PATH: process.env['PATH'], HOME: process.env['HOME'] } });
    t.equal(created.code, 0, created.stderr);
    const patId = (JSON.parse(created.stdout) as { id: string }).id;
    const tokenRecord = await until('token.create at the orchestrator', async () => (await listAudit(db.pool, { action: 'token.create', org: ORG }))[0], 15_000, 100);
    t.match(tokenRecord, { target: `token:${patId}`, outcome: 'ok', via: 'relay', actor: { kind: 'system', id: 'svc-admin' } });
    // The relay deletes the row when the orchestrator's ack comes back, after the record commits.
    const outboxLeft = async () => Number(await stack.relayDb.oneFirst(sql.unsafe`select count(*) from relay_audit_outbox`));
    await until('the relay drops the acked outbox row', async () => ((await outboxLeft()) === 0 ? true : undefined), 15_000, 50);
    t.equal(await outboxLeft(), 0, 'the outbox is drained');

    // The admin API: scope audit.read; filters as svc-admin audit list.
    const reader = await createAdminToken(db.pool, { name: 'auditor', scopes: ['audit.read'], unrestricted: false, createdBy: 'test' });
    const other = await createAdminToken(db.pool, { name: 'runs-only', scopes: ['runs.read'], unrestricted: false, createdBy: 'test' });
    const api = (token: string, query: string) => fetch(`${stack.orchestrator.url}/api/v1/admin/audit${query}`, { headers: { authorization: `Bearer ${token}` } });
    const answer = await api(reader.token, `?org=${ORG}&action=run.&actor=ann&limit=5`);
    t.equal(answer.status, 200);
    const { events } = (await answer.json()) as { events: Array<{ action: string; actor: { name: string } }> };
    t.ok(events.length > 0 && events.length <= 5 && events.every((e) => e.action.startsWith('run.') && e.actor.name === 'ann'), 'filtered');
    t.equal((await api(other.token, '')).status, 403, 'another scope is refused');
    t.equal((await api(reader.token, '?outcome=maybe')).status, 400);
    t.equal((await api(reader.token, '?since=yesterday')).status, 400);
    t.equal((await api(reader.token, '?nope=1')).status, 400, 'an unknown filter is refused');
  });
});

// The comment path through the ingest pipeline: `/svc approve` by a forge login is decided on the
// person the people directory links to that login (provider kind `forge` here).
await eachDatabase(t, async (t, db) => {
  const h = await makeHarness(t, db);
  const { secret } = await h.addSource();
  for (const sha of [SHA_A, SHA_B]) h.forge.putLock(sha, [gated({ teams: ['release'], count: 2 })]);
  await syncPeople(db.pool, 'acme', [
    { personId: randomUUID(), name: 'Fay', provider: 'forge', login: 'fay', teams: ['release'], roles: ['approver'], disabled: false },
    { personId: randomUUID(), name: 'Gus', provider: 'forge', login: 'gus', teams: ['release'], roles: [], disabled: false },
    { personId: randomUUID(), name: 'Hal', provider: 'forge', login: 'hal', teams: ['ops'], roles: [], disabled: false },
    { personId: randomUUID(), name: 'Ivy', provider: 'forge', login: 'ivy', teams: ['release'], roles: [], disabled: true },
    { personId: randomUUID(), name: 'Jo', provider: 'corp', login: 'jo', teams: ['release'], roles: [], disabled: false },
  ]);
  const pr = await h.pipeline.ingestDelivery(delivery(pullRequestPayload({ number: 9 }), { secret, eventType: 'pull_request' }));
  t.equal(pr.status, 'matched');
  const runId = pr.runIds[0]!;
  let commentId = 0;
  const comment = async (author: string) => {
    const d = delivery(issueCommentPayload('/svc approve', { number: 9, author, commentId: ++commentId }), { secret, eventType: 'issue_comment' });
    const outcome = await h.pipeline.ingestDelivery(d);
    t.equal(outcome.status, 'approval_command');
    return (await db.pool.oneFirst(sql.unsafe`select outcome from approval_commands where delivery_id = ${d.deliveryId}`)) as string;
  };
  const status = async () => (await db.pool.oneFirst(sql.unsafe`select status from runs where id = ${runId}`)) as string;

  t.match(await comment('hal'), /ignored: hal may not decide this workflow hold: it needs 2 of teams release; Hal is not in team release/);
  t.match(await comment('jo'), /jo is not linked to a signed-in person/, 'a person of another provider is not that forge login');
  t.match(await comment('ivy'), /ivy is not linked to a signed-in person/, 'a disabled person is no one');
  t.match(await comment('nobody'), /nobody is not linked to a signed-in person/);
  t.match(await comment('fay'), /fay's approval of the run is recorded; more approvals are needed/);
  t.equal(await status(), 'held');
  t.match(await comment('GUS'), /the run: approved/, 'logins compare ignoring case, as forges do');
  t.not(await status(), 'held');

  const records = (await listAudit(db.pool, { action: 'run.approve', org: 'acme' })).reverse();
  t.same(
    records.map((e) => [e.actor.kind, e.actor.name, e.outcome, e.via]),
    [
      ['person', 'Hal', 'refused', 'comment'],
      ['forge', 'jo', 'refused', 'comment'],
      ['forge', 'ivy', 'refused', 'comment'],
      ['forge', 'nobody', 'refused', 'comment'],
      ['person', 'Fay', 'ok', 'comment'],
      ['person', 'Gus', 'ok', 'comment'],
    ],
    'one record per comment; a linked author is recorded as the person',
  );
});
