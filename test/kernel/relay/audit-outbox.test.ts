// The relay's side of the audit trail (docs/audit.md) on a real relay and real PostgreSQL, with a
// test orchestrator on the real relay link:
// - each changing relay action writes exactly one outbox record: token sign-in, sign-out, token
//   creation and revocation by its user, role grant and revocation by an admin, a change refused
//   for lack of a role; reads write none;
// - the forwarder hands the outbox to the org's orchestrator (`audit.record.request`), deletes what
//   it stored, keeps what it refused, and sends the org's people directory when it connects.
import t from 'tap';
import type { RelayToOrchestrator } from '../../../schemas/wire/relay.ts';
import { grantRole } from '../../../kernel/relay/people/roles.ts';
import { mintPersonToken, upsertPerson } from '../../../kernel/relay/people/store.ts';
import { createPat } from '../../../kernel/relay/pats/index.ts';
import { sql } from '../../../kernel/services/db/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { fakeOrchestrator, newOrg, startTestRelay, until } from './harness.ts';

interface Row {
  action: string;
  actor_kind: string;
  actor_name: string;
  target: string;
  outcome: string;
  detail: string;
}

await eachDatabase(t, async (t, db) => {
  const platformToken = await newOrg(db.pool, 'acme');
  const handle = await startTestRelay(t, db.url);
  const base = handle.url;
  const outbox = async () => (await db.pool.any(sql.unsafe`select action, actor_kind, actor_name, target, outcome, detail from relay_audit_outbox order by at, id`)) as unknown as Row[];

  const admin = await upsertPerson(db.pool, 'corp', { subject: 's-admin', logins: ['ada'], displayName: 'Ada Admin', groups: ['ops'] });
  await grantRole(db.pool, 'acme', admin.id, 'admin', 'test');
  const viewer = await upsertPerson(db.pool, 'corp', { subject: 's-vic', logins: ['vic'], groups: ['release'] });
  await grantRole(db.pool, 'acme', viewer.id, 'viewer', 'test');
  const adminToken = (await mintPersonToken(db.pool, { orgId: 'acme', person: admin, name: 't', ttlSeconds: 3600, grantId: null, refresh: false })).token;
  const viewerToken = (await mintPersonToken(db.pool, { orgId: 'acme', person: viewer, name: 't', ttlSeconds: 3600, grantId: null, refresh: false })).token;
  const auth = (token: string) => ({ authorization: `Bearer ${token}` });

  await t.test('each changing action: one outbox record; reads none', async (t) => {
    const steps: Array<[string, () => Promise<Response>, Partial<Row>]> = [
      ['token.create', () => fetch(`${base}/v1/pats`, { method: 'POST', headers: { ...auth(viewerToken), 'content-type': 'application/json' }, body: JSON.stringify({ name: 'laptop', expiresInDays: 30 }) }), { actor_kind: 'person', actor_name: 'vic', outcome: 'ok' }],
      ['role.grant', () => fetch(`${base}/v1/orgs/acme/people/${viewer.id}/roles/approver`, { method: 'PUT', headers: auth(adminToken) }), { actor_kind: 'person', actor_name: 'ada', target: `person:${viewer.id}`, detail: 'role approver' }],
      ['role.revoke', () => fetch(`${base}/v1/orgs/acme/people/${viewer.id}/roles/approver`, { method: 'DELETE', headers: auth(adminToken) }), { target: `person:${viewer.id}`, detail: 'role approver' }],
      ['run.cancel', () => fetch(`${base}/orgs/acme/runs/5b0c6c2e-3f1e-4c1a-9d55-0c5bd1f1f001/cancel`, { method: 'POST', headers: auth(viewerToken) }), { actor_name: 'vic', outcome: 'refused', target: 'run:5b0c6c2e-3f1e-4c1a-9d55-0c5bd1f1f001' }],
    ];
    for (const [action, call, expected] of steps) {
      const before = (await outbox()).length;
      const res = await call();
      t.ok(res.status < 500, `${action}: ${res.status}`);
      const rows = await outbox();
      t.equal(rows.length, before + 1, `${action}: one record`);
      t.match(rows.at(-1), { action, ...expected }, action);
    }
    t.match((await outbox()).at(-1)?.detail, /this needs the developer role in org acme/);
    const created = (await outbox()).find((r) => r.action === 'token.create')!;
    const patId = created.target.replace('token:', '');
    const revoked = await fetch(`${base}/v1/pats/${patId}`, { method: 'DELETE', headers: auth(viewerToken) });
    t.equal(revoked.status, 200);
    t.match((await outbox()).at(-1), { action: 'token.revoke', target: `token:${patId}`, actor_name: 'vic' });
    const again = (await outbox()).length;
    await fetch(`${base}/v1/pats/${patId}`, { method: 'DELETE', headers: auth(viewerToken) });
    t.equal((await outbox()).length, again, 'revoking a revoked token changes nothing and records nothing');
    for (const path of ['/v1/pats', '/v1/orgs/acme/people', '/v1/whoami']) await fetch(`${base}${path}`, { headers: auth(adminToken) });
    t.equal((await outbox()).length, again, 'reads record nothing');
  });

  await t.test('browser sign-in with a token and sign-out: one record each', async (t) => {
    const pat = await createPat(db.pool, 'acme', 'sam');
    const before = (await outbox()).length;
    const signIn = await fetch(`${base}/signin`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base }, body: `token=${encodeURIComponent(pat.token)}&next=%2Fui` });
    t.equal(signIn.status, 303);
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    const page = await (await fetch(`${base}/ui/orgs/acme/runs`, { headers: { cookie } })).text();
    const csrf = /data-csrf="([^"]+)"/.exec(page)?.[1] ?? '';
    const signOut = await fetch(`${base}/signout`, { method: 'POST', redirect: 'manual', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: base }, body: `csrf=${encodeURIComponent(csrf)}` });
    t.equal(signOut.status, 303);
    const rows = (await outbox()).slice(before);
    t.same(rows.map((r) => [r.action, r.actor_kind, r.actor_name]), [['session.sign_in', 'token', 'sam'], ['session.sign_out', 'token', 'sam']]);
  });

  await t.test('the forwarder: the org orchestrator stores the outbox (kept while it refuses); the directory at connect', async (t) => {
    const waiting = (await outbox()).length;
    t.ok(waiting > 0);
    let refuse = true;
    const received: RelayToOrchestrator[] = [];
    // Answers wait for the link object (the directory is sent while the link is still connecting).
    let setLink: (link: { send(message: unknown): void }) => void = () => {};
    const linked = new Promise<{ send(message: unknown): void }>((resolve) => (setLink = resolve));
    const orchestrator = await fakeOrchestrator(t, base, platformToken, {
      onMessage: (message) => {
        if (!('requestId' in message)) return;
        received.push(message);
        const type = message.type.replace(/\.request$/, '.response');
        const answer =
          message.type === 'audit.record.request' && refuse
            ? { type, requestId: message.requestId, error: { code: 'SVC_ERR_INTERNAL', message: 'not now', status: 500 } }
            : { type, requestId: message.requestId, stored: 'records' in message ? message.records.length : 0 };
        void linked.then((link) => link.send(answer));
      },
    });
    setLink(orchestrator.link as never);
    await until(() => received.some((m) => m.type === 'audit.record.request'), 15_000, 'a batch');
    t.equal((await outbox()).length, waiting, 'a refused batch stays in the outbox');
    const sync = received.find((m) => m.type === 'people.sync.request');
    t.ok(sync !== undefined, 'the directory was sent at connect');
    if (sync?.type === 'people.sync.request') {
      const vic = sync.people.find((p) => p.login === 'vic');
      t.same(vic, { personId: viewer.id, name: 'vic', provider: 'corp', login: 'vic', teams: ['release'], roles: ['viewer'], disabled: false });
    }
    refuse = false;
    await until(async () => (await outbox()).length === 0, 15_000, 'the outbox drained');
    const sent = received.filter((m) => m.type === 'audit.record.request').at(-1);
    if (sent?.type === 'audit.record.request') {
      t.equal(sent.orgId, 'acme');
      t.ok(sent.records.every((r) => /^[0-9a-f-]{36}$/.test(r.id) && r.at.endsWith('Z')), 'each record carries its id and time');
    }
  });
});
