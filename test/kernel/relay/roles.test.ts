// Roles × actions at a real relay on real PostgreSQL (docs/roles.md): every route the relay's
// route registry lists (`relay.routes`) must have an entry in EXPECTED below — a new route
// without one fails here — and every org route is called by a person of each role (viewer,
// developer, approver, admin, none), by a token narrowed to `viewer`, and by the org's platform
// token: allowed, or refused with 403 SVC_ERR_RELAY_ROLE_REQUIRED and a text naming the role it
// needs (the JSON API, the dashboard's pages and its actions alike). A fake orchestrator over the
// real relay link records every request relayed to it: a refused call relays nothing, and each
// relayed action reaches it only from a caller whose roles permit that action.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { RelayToOrchestratorMembers, type RelayToOrchestrator } from '../../../schemas/wire/relay.ts';
import { ACTION_ROLE, RELAYED_ACTION, ROLE_INCLUDES } from '../../../kernel/relay/people/access.ts';
import { grantRole, ROLES, type Role } from '../../../kernel/relay/people/roles.ts';
import { mintPersonToken, upsertPerson } from '../../../kernel/relay/people/store.ts';
import { createPat } from '../../../kernel/relay/pats/index.ts';
import { eachDatabase } from '../../fixtures/db.ts';
import { fakeOrchestrator, newOrg, startTestRelay } from './harness.ts';

/** The role each org route needs; `public` and `self` routes need no org role. */
const EXPECTED: Record<string, Role | 'public' | 'self'> = {
  'GET /v1/orgs/:orgId/runs': 'viewer',
  'GET /v1/orgs/:orgId/runs/:runId': 'viewer',
  'GET /v1/orgs/:orgId/runs/:runId/logs': 'viewer',
  'GET /v1/orgs/:orgId/runs/:runId/timeline': 'viewer',
  'GET /v1/orgs/:orgId/runs/:runId/artifacts': 'viewer',
  'GET /v1/orgs/:orgId/runs/:runId/artifacts/:name': 'viewer',
  'GET /orgs/:orgId/runs/:runId/payload': 'viewer',
  'GET /v1/orgs/:orgId/orchestrators': 'viewer',
  'GET /v1/orgs/:orgId/endpoints': 'viewer',
  'GET /v1/orgs/:orgId/report': 'viewer',
  'GET /v1/orgs/:orgId/notifications': 'viewer',
  'GET /v1/orgs/:orgId/tests': 'viewer',
  'GET /v1/orgs/:orgId/logs/search': 'viewer',
  'GET /v1/orgs/:orgId/runs/:runId/tests': 'viewer',
  'POST /v1/orgs/:orgId/tests/quarantine': 'developer',
  'POST /orgs/:orgId/runs/:runId/rerun': 'developer',
  'POST /orgs/:orgId/runs/:runId/cancel': 'developer',
  'POST /orgs/:orgId/runs/:runId/approve': 'approver',
  'POST /orgs/:orgId/runs/:runId/reject': 'approver',
  'POST /v1/orgs/:orgId/runs/:runId/approve': 'approver',
  'POST /v1/orgs/:orgId/runs/:runId/reject': 'approver',
  'POST /v1/orgs/:orgId/remote-runs/uploads': 'developer',
  'POST /v1/orgs/:orgId/remote-runs': 'developer',
  'GET /v1/orgs/:orgId/secrets': 'admin',
  'POST /v1/orgs/:orgId/secrets/:context/:key': 'admin',
  'GET /v1/orgs/:orgId/people': 'admin',
  'PUT /v1/orgs/:orgId/people/:person/roles/:role': 'admin',
  'DELETE /v1/orgs/:orgId/people/:person/roles/:role': 'admin',
  'GET /ui/orgs/:orgId/runs': 'viewer',
  'GET /ui/orgs/:orgId/runs/:runId': 'viewer',
  'GET /ui/orgs/:orgId/runs/:runId/logs': 'viewer',
  'GET /ui/orgs/:orgId/runs/:runId/logs/stream': 'viewer',
  'GET /ui/orgs/:orgId/runs/events': 'viewer',
  'GET /ui/orgs/:orgId/runs/:runId/attestations/:attestationId': 'viewer',
  'GET /ui/orgs/:orgId/runs/:runId/tests': 'viewer',
  'GET /ui/orgs/:orgId/tests': 'viewer',
  'GET /ui/orgs/:orgId/logs/search': 'viewer',
  'GET /ui/orgs/:orgId/tests/history': 'viewer',
  'POST /ui/orgs/:orgId/tests/quarantine': 'developer',
  'GET /ui/orgs/:orgId/events': 'viewer',
  'GET /ui/orgs/:orgId/events/:deliveryId/payload': 'viewer',
  'GET /ui/orgs/:orgId/agents': 'viewer',
  'GET /ui/orgs/:orgId/audit': 'admin',
  'POST /ui/orgs/:orgId/runs/:runId/rerun': 'developer',
  'POST /ui/orgs/:orgId/runs/:runId/rerun-failed': 'developer',
  'POST /ui/orgs/:orgId/runs/:runId/cancel': 'developer',
  'POST /ui/orgs/:orgId/runs/:runId/approve': 'approver',
  'POST /ui/orgs/:orgId/runs/:runId/reject': 'approver',
  'GET /v1/whoami': 'self',
  'GET /v1/pats': 'self',
  'POST /v1/pats': 'self',
  'DELETE /v1/pats/:id': 'self',
  'GET /device': 'self',
  'POST /device': 'self',
  'POST /signout': 'self',
  'GET /': 'public',
  'GET /ui': 'public',
  'GET /signin': 'public',
  'POST /signin': 'public',
  'GET /signin/:provider': 'public',
  'GET /signin/:provider/callback': 'public',
  'POST /v1/device/code': 'public',
  'POST /v1/device/token': 'public',
  'POST /v1/token/refresh': 'public',
  'GET /static/relay.css': 'public',
  'GET /ui/static/dashboard.css': 'public',
  'GET /ui/static/dashboard.js': 'public',
  'GET /favicon.ico': 'public',
};

const PARAMS: Record<string, string> = {
  orgId: 'acme',
  runId: randomUUID(),
  name: 'dist',
  context: 'test',
  key: 'TOKEN',
  attestationId: randomUUID(),
  deliveryId: 'delivery-1',
  person: 'corp:dora',
  role: 'viewer',
};

/** Queries some routes need before they look at anything else. */
const QUERY: Record<string, string> = { '/v1/orgs/:orgId/tests': '?view=failed', '/v1/orgs/:orgId/logs/search': '?q=error', '/ui/orgs/:orgId/logs/search': '?q=error' };

function concrete(pattern: string): string {
  return pattern.replace(/:([A-Za-z]+)/g, (_m, name: string) => encodeURIComponent(PARAMS[name] ?? name)) + (QUERY[pattern] ?? '');
}

/** A body that passes each route's input checks where that is easy; the role is checked before the body anyway. */
function bodyFor(key: string): string {
  if (key.includes('/secrets/')) return JSON.stringify({ value: 'v' });
  if (key.includes('/tests/quarantine')) return JSON.stringify({ test: 'a', quarantined: true });
  return '{}';
}

type Who = Role | 'none' | 'scoped-viewer' | 'platform';

function heldBy(who: Who): readonly Role[] {
  if (who === 'platform') return ROLES;
  if (who === 'none') return [];
  if (who === 'scoped-viewer') return ['viewer'];
  return ROLE_INCLUDES[who];
}

function responseType(type: string): string {
  return type === 'dashboard.payload' ? 'dashboard.payload.response' : type.replace(/\.request$/, '.response');
}

await eachDatabase(t, async (t, db) => {
  const platformToken = await newOrg(db.pool, 'acme');
  const handle = await startTestRelay(t, db.url);
  const base = handle.url;

  // One person per role (granted by an admin here; groups are covered in sso.test.ts), and one without.
  const tokens = new Map<Who, string>();
  for (const who of [...ROLES, 'none'] as const) {
    const person = await upsertPerson(db.pool, 'corp', { subject: `s-${who}`, logins: [`p-${who}`], groups: [] });
    if (who !== 'none') await grantRole(db.pool, 'acme', person.id, who, 'test');
    tokens.set(who, (await mintPersonToken(db.pool, { orgId: 'acme', person, name: 'test', ttlSeconds: 3600, grantId: null, refresh: false })).token);
  }
  await upsertPerson(db.pool, 'corp', { subject: 's-dora', logins: ['dora'], groups: [] });
  tokens.set('scoped-viewer', (await createPat(db.pool, 'acme', 'ci-bot', 'bot', { scopes: ['viewer'] })).token);
  tokens.set('platform', platformToken);

  // The orchestrator answers every relayed request with a refusal of its own, and records it.
  const relayed: Array<{ type: string; at: number }> = [];
  let link: Awaited<ReturnType<typeof fakeOrchestrator>>['link'] | undefined;
  const orchestrator = await fakeOrchestrator(t, base, platformToken, {
    onMessage: (message: RelayToOrchestrator) => {
      if (!('requestId' in message)) return;
      // The relay's own traffic (audit outbox, people directory: kernel/relay/audit) is for no caller.
      if (message.type === 'audit.record.request' || message.type === 'people.sync.request') {
        link?.send({ type: responseType(message.type), requestId: message.requestId, stored: 0 } as never);
        return;
      }
      relayed.push({ type: message.type, at: Date.now() });
      link?.send({ type: responseType(message.type), requestId: message.requestId, error: { code: 'SVC_ERR_RUNS_NOT_FOUND', message: 'recorded by the test orchestrator', status: 404 } } as never);
    },
  });
  link = orchestrator.link;

  await t.test('every route of the registry has an entry', async (t) => {
    const routes = [...new Set(handle.relay.routes)].filter((r) => !/ \/webhook\//.test(r) && !r.startsWith('OPTIONS '));
    t.ok(routes.length > 40, `${routes.length} routes`);
    const missing = routes.filter((r) => EXPECTED[r] === undefined);
    t.same(missing, [], 'each route has an entry in EXPECTED (and in ROUTE_ACCESS, kernel/relay/people/access.ts)');
    // Entries ahead of their routes (work landing in parallel) are only reported.
    const ahead = Object.keys(EXPECTED).filter((k) => !routes.includes(k) && !k.startsWith('GET /signin/:provider'));
    if (ahead.length > 0) t.comment(`entries without a route (yet): ${ahead.join(', ')}`);
  });

  await t.test('every relayed request type names an action', async (t) => {
    for (const member of RelayToOrchestratorMembers) {
      const type = (member.properties as { type: { const: string } }).type.const;
      if (!('requestId' in member.properties)) continue;
      t.ok(RELAYED_ACTION[type as keyof typeof RELAYED_ACTION], `${type} → ${RELAYED_ACTION[type as keyof typeof RELAYED_ACTION]}`);
    }
  });

  const orgRoutes = Object.entries(EXPECTED).filter((e): e is [string, Role] => e[1] !== 'public' && e[1] !== 'self' && handle.relay.routes.includes(e[0]));
  for (const who of [...ROLES, 'none', 'scoped-viewer', 'platform'] as const) {
    await t.test(`as ${who}`, async (t) => {
      const held = heldBy(who);
      for (const [key, needed] of orgRoutes) {
        const [method, pattern] = key.split(' ') as [string, string];
        const before = relayed.length;
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), 10_000);
        const response = await fetch(`${base}${concrete(pattern)}`, {
          method,
          signal: controller.signal,
          headers: { authorization: `Bearer ${tokens.get(who)}`, accept: 'application/json', ...(method === 'GET' || method === 'DELETE' ? {} : { 'content-type': 'application/json' }) },
          ...(method === 'GET' || method === 'DELETE' ? {} : { body: bodyFor(key) }),
        });
        const allowed = held.includes(needed);
        if (allowed) {
          // Streams would go on: the status is the answer.
          await response.body?.cancel().catch(() => undefined);
          clearTimeout(timer);
          t.not(response.status, 403, `${key}: allowed for ${who}`);
          for (const frame of relayed.slice(before)) {
            const role = ACTION_ROLE[RELAYED_ACTION[frame.type as keyof typeof RELAYED_ACTION]];
            t.ok(held.includes(role), `${key} relayed ${frame.type} (needs ${role}) for ${who}`);
          }
        } else {
          const text = await response.text();
          clearTimeout(timer);
          t.equal(response.status, 403, `${key}: refused for ${who}`);
          t.match(text, /SVC_ERR_RELAY_ROLE_REQUIRED/, `${key}: the code`);
          t.match(text, new RegExp(`needs the ${needed} role in org acme`), `${key}: names the role ${needed}`);
          t.equal(relayed.length, before, `${key}: nothing relayed`);
        }
      }
    });
  }

  await t.test('relayed actions were exercised for each role they need', async (t) => {
    const seen = new Set(relayed.map((r) => r.type));
    for (const type of ['run.rerun.request', 'run.cancel.request', 'run.approve.request', 'run.show.request', 'org.secrets.list.request', 'org.secret.set.request', 'remote.upload.request', 'dashboard.payload']) {
      t.ok(seen.has(type), `${type} reached the orchestrator`);
    }
  });
});
