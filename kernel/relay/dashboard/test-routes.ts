// The test-result routes of the developer CLI and any API client (docs/test-results.md), each
// forwarded to a connected orchestrator of the org as one `tests.request`:
//   GET  /v1/orgs/:orgId/tests?view=failed|flaky|history|quarantine&…  → 200 the view
//   GET  /v1/orgs/:orgId/runs/:runId/tests                             → 200 the run's tests
//   POST /v1/orgs/:orgId/tests/quarantine  { action, repository?, suite, name, reason } → 200 { entry }
// Reads need a viewer; a quarantine change needs `tests.quarantine` (developer), recorded with
// the caller as who.
import type { FastifyRequest } from 'fastify';
import { DEFAULT_TESTS_LIMIT, QuarantineChangeBody, TestsViewQuery } from '../../../schemas/http/tests.ts';
import type { TestsAnswer, TestsQuery } from '../../../schemas/wire/relay.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { InputError } from '../../../core/errors.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import type { SvcHttpServer } from '../../services/http/index.ts';
import { ORG_ID_PATTERN } from '../orgs.ts';
import { authorize, type Caller } from './auth.ts';
import type { DashboardBroker } from './broker.ts';
import { RelayedError, failed, send, unwrap } from './relayed.ts';

const checkChange = compileSchema(QuarantineChangeBody);

async function orgCaller(db: DatabasePool, request: FastifyRequest): Promise<{ caller: Caller; orgId: string }> {
  const { orgId } = request.params as { orgId: string };
  const caller = await authorize(db, request, ORG_ID_PATTERN.test(orgId) ? orgId : `\u0000${orgId}`);
  return { caller, orgId };
}

/** The relayed query for a `GET …/tests` query string. */
export function viewQuery(q: TestsViewQuery): TestsQuery {
  const repo = q.repository === undefined ? {} : { repository: q.repository };
  const limit = q.limit ?? DEFAULT_TESTS_LIMIT;
  switch (q.view) {
    case 'failed':
      return { view: 'failed', ...repo, limit };
    case 'flaky':
      return { view: 'flaky', ...repo, limit };
    case 'quarantine':
      return { view: 'quarantine', ...repo, includeRemoved: q.all === true };
    case 'history':
      if (q.name === undefined) throw new InputError('SVC_ERR_HTTP_INVALID_QUERY', 'view=history needs name=<test name> (and suite= and repository= to narrow it)');
      return { view: 'history', ...repo, ...(q.suite === undefined ? {} : { suite: q.suite }), name: q.name, limit: q.limit ?? 100 };
  }
}

/** Sends one tests.request for the caller and returns the answer (RelayedError on the orchestrator's refusal). */
export async function askTests(broker: DashboardBroker, orgId: string, caller: Caller, query: TestsQuery): Promise<TestsAnswer> {
  const response = unwrap(await broker.request(orgId, { type: 'tests.request', orgId, actor: caller.actor, query }));
  if (response.answer === undefined) throw new RelayedError({ code: 'SVC_ERR_RELAY_BAD_ANSWER', message: 'the orchestrator answered without the tests', status: 502 });
  return response.answer;
}

export function registerTestRoutes(app: SvcHttpServer, options: { db: DatabasePool; broker: DashboardBroker }): void {
  const { db, broker } = options;

  app.get('/v1/orgs/:orgId/tests', { schema: { querystring: TestsViewQuery } }, async (request, reply) => {
    try {
      const { caller, orgId } = await orgCaller(db, request);
      return send(reply, 200, await askTests(broker, orgId, caller, viewQuery(request.query as TestsViewQuery)));
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.get('/v1/orgs/:orgId/runs/:runId/tests', async (request, reply) => {
    try {
      const { caller, orgId } = await orgCaller(db, request);
      const { runId } = request.params as { runId: string };
      if (runId.length > 200) throw new InputError('SVC_ERR_RUNS_ID_INVALID', 'a run id is at most 200 characters');
      return send(reply, 200, await askTests(broker, orgId, caller, { view: 'run', runId }));
    } catch (error) {
      return failed(reply, error);
    }
  });

  app.post('/v1/orgs/:orgId/tests/quarantine', async (request, reply) => {
    try {
      const { caller, orgId } = await orgCaller(db, request);
      const checked = checkChange.validate(request.body ?? {});
      if (!checked.ok) throw new InputError('SVC_ERR_HTTP_INVALID_BODY', `invalid request body: ${formatIssues(checked.issues)}; send { action: "add"|"remove", repository?, suite, name, reason }`);
      const b = checked.value;
      const query: TestsQuery = { view: b.action === 'add' ? 'quarantine.add' : 'quarantine.remove', ...(b.repository === undefined ? {} : { repository: b.repository }), suite: b.suite, name: b.name, reason: b.reason };
      return send(reply, 200, await askTests(broker, orgId, caller, query));
    } catch (error) {
      return failed(reply, error);
    }
  });
}
