// Who may do what at the relay (docs/roles.md), in one table: every route of the relay (its
// method and URL pattern, as the route registry lists them) names the action it performs, and
// every action names the role it needs. `authorize` (dashboard/auth.ts) applies it to each org
// route, for the JSON API, the dashboard's pages and the actions relayed to orchestrators alike;
// a route missing here is refused (500) and fails the table test (test/kernel/relay/roles.test.ts).
import type { FastifyRequest } from 'fastify';
import { NotAllowedError } from '../../../core/errors.ts';
import type { BrokerRequest } from '../dashboard/broker.ts';
import { ROLES, sortRoles, type Role } from './roles.ts';

/** What a route does; each needs one role. */
export const ACTION_ROLE = {
  'runs.view': 'viewer', // runs, logs, artifacts, payloads, event log, agents, report
  'runs.rerun': 'developer',
  'runs.cancel': 'developer',
  'runs.remote': 'developer',
  'tests.quarantine': 'developer', // put tests into quarantine and take them out
  'runs.approve': 'approver', // approve and reject holds
  'org.secrets': 'admin', // test-context secrets (list and set)
  'org.roles': 'admin', // who holds which role; granting and taking back roles
  'org.audit': 'admin', // the audit trail page (docs/audit.md)
} as const satisfies Record<string, Role>;
export type Action = keyof typeof ACTION_ROLE;

/** Which roles a role includes: admin may do everything, developer and approver also view. */
export const ROLE_INCLUDES: Record<Role, readonly Role[]> = {
  viewer: ['viewer'],
  developer: ['developer', 'viewer'],
  approver: ['approver', 'viewer'],
  admin: ROLES,
};

/**
 * A route outside any org: `public` needs nothing (sign-in pages, webhooks, health), `self`
 * acts on the caller's own things only (its tokens, its identity, its device approvals).
 */
export type RouteAccess = Action | 'public' | 'self';

export const ROUTE_ACCESS: Record<string, RouteAccess> = {
  // Developer CLI and dashboard JSON routes (dashboard/routes.ts, org-routes.ts, run-list.ts)
  'GET /v1/orgs/:orgId/runs': 'runs.view',
  'GET /v1/orgs/:orgId/runs/:runId': 'runs.view',
  'GET /v1/orgs/:orgId/runs/:runId/logs': 'runs.view',
  'GET /v1/orgs/:orgId/runs/:runId/timeline': 'runs.view',
  'GET /v1/orgs/:orgId/runs/:runId/artifacts': 'runs.view',
  'GET /v1/orgs/:orgId/runs/:runId/artifacts/:name': 'runs.view',
  'GET /orgs/:orgId/runs/:runId/payload': 'runs.view',
  'GET /v1/orgs/:orgId/orchestrators': 'runs.view',
  'GET /v1/orgs/:orgId/endpoints': 'runs.view',
  'GET /v1/orgs/:orgId/report': 'runs.view',
  'GET /v1/orgs/:orgId/notifications': 'runs.view',
  'GET /v1/orgs/:orgId/tests': 'runs.view',
  'GET /v1/orgs/:orgId/logs/search': 'runs.view',
  'GET /v1/orgs/:orgId/runs/:runId/tests': 'runs.view',
  'POST /v1/orgs/:orgId/tests/quarantine': 'tests.quarantine',
  'POST /orgs/:orgId/runs/:runId/rerun': 'runs.rerun',
  'POST /orgs/:orgId/runs/:runId/cancel': 'runs.cancel',
  'POST /orgs/:orgId/runs/:runId/approve': 'runs.approve',
  'POST /orgs/:orgId/runs/:runId/reject': 'runs.approve',
  'POST /v1/orgs/:orgId/runs/:runId/approve': 'runs.approve',
  'POST /v1/orgs/:orgId/runs/:runId/reject': 'runs.approve',
  'POST /v1/orgs/:orgId/remote-runs/uploads': 'runs.remote',
  'POST /v1/orgs/:orgId/remote-runs': 'runs.remote',
  'GET /v1/orgs/:orgId/secrets': 'org.secrets',
  'POST /v1/orgs/:orgId/secrets/:context/:key': 'org.secrets',
  'GET /v1/orgs/:orgId/people': 'org.roles',
  'PUT /v1/orgs/:orgId/people/:person/roles/:role': 'org.roles',
  'DELETE /v1/orgs/:orgId/people/:person/roles/:role': 'org.roles',
  // The web dashboard (dashboard/ui)
  'GET /ui/orgs/:orgId/runs': 'runs.view',
  'GET /ui/orgs/:orgId/runs/:runId': 'runs.view',
  'GET /ui/orgs/:orgId/runs/:runId/logs': 'runs.view',
  'GET /ui/orgs/:orgId/runs/:runId/logs/stream': 'runs.view',
  'GET /ui/orgs/:orgId/runs/events': 'runs.view',
  'GET /ui/orgs/:orgId/runs/:runId/attestations/:attestationId': 'runs.view',
  'GET /ui/orgs/:orgId/events': 'runs.view',
  'GET /ui/orgs/:orgId/events/:deliveryId/payload': 'runs.view',
  'GET /ui/orgs/:orgId/agents': 'runs.view',
  'GET /ui/orgs/:orgId/runs/:runId/tests': 'runs.view',
  'GET /ui/orgs/:orgId/tests': 'runs.view',
  'GET /ui/orgs/:orgId/logs/search': 'runs.view',
  'GET /ui/orgs/:orgId/tests/history': 'runs.view',
  'POST /ui/orgs/:orgId/tests/quarantine': 'tests.quarantine',
  'GET /ui/orgs/:orgId/audit': 'org.audit',
  'POST /ui/orgs/:orgId/runs/:runId/rerun': 'runs.rerun',
  'POST /ui/orgs/:orgId/runs/:runId/rerun-failed': 'runs.rerun',
  'POST /ui/orgs/:orgId/runs/:runId/cancel': 'runs.cancel',
  'POST /ui/orgs/:orgId/runs/:runId/approve': 'runs.approve',
  'POST /ui/orgs/:orgId/runs/:runId/reject': 'runs.approve',
  // The caller's own things
  'GET /v1/whoami': 'self',
  'GET /v1/pats': 'self',
  'POST /v1/pats': 'self',
  'DELETE /v1/pats/:id': 'self',
  'GET /device': 'self',
  'POST /device': 'self',
  'POST /signout': 'self',
  // No credential needed
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
  'GET /healthz': 'public',
  'GET /metrics': 'public',
};

/** Webhook ingress (kernel/webhook/front-door.ts): authenticated by the orchestrator's signature check. */
export const PUBLIC_PREFIXES = ['/webhook/'] as const;

/**
 * The action each request relayed to an orchestrator performs (a new wire request type fails to
 * compile until it is placed here); a route relaying it must need at least that action's role.
 */
export const RELAYED_ACTION: Record<BrokerRequest['type'], Action> = {
  'run.rerun.request': 'runs.rerun',
  'run.cancel.request': 'runs.cancel',
  'run.approve.request': 'runs.approve',
  'dashboard.payload': 'runs.view',
  'run.show.request': 'runs.view',
  'run.logs.request': 'runs.view',
  'run.artifacts.request': 'runs.view',
  'run.artifact.chunk.request': 'runs.view',
  'org.secrets.list.request': 'org.secrets',
  'org.secret.set.request': 'org.secrets',
  'org.notifications.request': 'runs.view',
  'remote.upload.request': 'runs.remote',
  'remote.run.request': 'runs.remote',
  'run.detail.request': 'runs.view',
  'run.attestation.request': 'runs.view',
  'run.timeline.request': 'runs.view',
  'deliveries.list.request': 'runs.view',
  'delivery.payload.request': 'runs.view',
  'fleet.request': 'runs.view',
  // Reads need a viewer; the quarantine routes that relay changes need tests.quarantine.
  'tests.request': 'runs.view',
  'logs.search.request': 'runs.view',
  'audit.list.request': 'org.audit',
  // Sent by the relay itself (its audit outbox, the people directory), never for a caller's route.
  'audit.record.request': 'org.audit',
  'people.sync.request': 'org.audit',
};

/** The access rule of a request's route, by its method and URL pattern. */
export function routeAccessOf(request: FastifyRequest): RouteAccess | undefined {
  const pattern = request.routeOptions.url ?? '';
  return ROUTE_ACCESS[`${request.method === 'HEAD' ? 'GET' : request.method} ${pattern}`];
}

/** True when `roles` include one that permits `action`. */
export function permits(roles: readonly Role[], action: Action): boolean {
  const needed = ACTION_ROLE[action];
  return roles.some((role) => ROLE_INCLUDES[role].includes(needed));
}

/** Everything a set of held roles amounts to (admin → all four). */
export function expandRoles(roles: readonly Role[]): Role[] {
  return sortRoles(roles.flatMap((role) => ROLE_INCLUDES[role]));
}

/** Refuses an action the roles do not permit, naming the role it needs. */
export function requireAction(caller: { orgId: string; roles?: readonly Role[] | undefined }, action: Action): void {
  const roles = caller.roles ?? [];
  if (permits(roles, action)) return;
  const needed = ACTION_ROLE[action];
  throw new NotAllowedError(
    'SVC_ERR_RELAY_ROLE_REQUIRED',
    `this needs the ${needed} role in org ${caller.orgId} (${action}); you have ${roles.length === 0 ? 'no role there' : `the role(s) ${roles.join(', ')}`}. Ask an admin of ${caller.orgId} for ${needed} (a group mapped to it, or "svc-admin relay role grant")`,
    { details: { role: needed, action } },
  );
}
