// `tests.request` from the relay (svc tests, the dashboard's test pages, quarantine changes):
// one view or change per request, always answered with exactly one `tests.response`.
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import { isSvcError } from '../../../core/errors.ts';
import type { DashboardError, TestsAnswer, TestsRequest, TestsResponse } from '../../../schemas/wire/relay.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { STATUS_BY_KIND } from '../../services/http/index.ts';
import { failedTests, flakyTests, runTests, testHistory } from './queries.ts';
import { addQuarantine, quarantineEntries, removeQuarantine } from './quarantine.ts';

type Request = Static<typeof TestsRequest>;
type Response = Static<typeof TestsResponse>;

function errorOf(error: unknown, logger: Logger, request: Request): DashboardError {
  if (isSvcError(error) && error.kind !== 'internal') return { code: error.code, message: error.message.slice(0, 2000), status: STATUS_BY_KIND[error.kind] };
  logger.error({ err: error, view: request.query.view }, 'tests request failed');
  return { code: 'SVC_ERR_INTERNAL', message: `the orchestrator could not answer tests.request (request ${request.requestId}); see its log`, status: 500 };
}

async function answerOf(pool: DatabasePool, request: Request): Promise<TestsAnswer> {
  const { orgId, actor, query } = request;
  const repo = (r: string | undefined) => (r === undefined ? {} : { repository: r });
  switch (query.view) {
    case 'run':
      return { view: 'run', run: await runTests(pool, orgId, query.runId) };
    case 'failed':
      return { view: 'failed', results: await failedTests(pool, orgId, { ...repo(query.repository), limit: query.limit }) };
    case 'flaky':
      return { view: 'flaky', tests: await flakyTests(pool, orgId, { ...repo(query.repository), limit: query.limit }) };
    case 'history':
      return {
        view: 'history',
        history: await testHistory(pool, orgId, { ...repo(query.repository), ...(query.suite === undefined ? {} : { suite: query.suite }), name: query.name, limit: query.limit }),
      };
    case 'quarantine':
      return { view: 'quarantine', entries: await quarantineEntries(pool, orgId, { ...repo(query.repository), includeRemoved: query.includeRemoved }) };
    case 'quarantine.add':
      return { view: 'quarantine.add', entry: await addQuarantine(pool, orgId, { ...repo(query.repository), suite: query.suite, name: query.name }, query.reason, actor) };
    case 'quarantine.remove':
      return { view: 'quarantine.remove', entry: await removeQuarantine(pool, orgId, { ...repo(query.repository), suite: query.suite, name: query.name }, query.reason, actor) };
  }
}

/** A relay frame holds 4 MiB: a run view over 3 MiB loses its outputs, then its passed cases, then failures. */
const MAX_ANSWER_BYTES = 3 * 1024 * 1024;
function fit(answer: TestsAnswer): TestsAnswer {
  if (answer.view !== 'run' || Buffer.byteLength(JSON.stringify(answer)) <= MAX_ANSWER_BYTES) return answer;
  const run = { ...answer.run, results: answer.run.results.map((r) => ({ ...r, output: r.output === null ? null : r.output.slice(0, 500) })) };
  while (run.results.length > 0 && Buffer.byteLength(JSON.stringify(run)) > MAX_ANSWER_BYTES) {
    const drop = Math.ceil(run.results.length / 4);
    run.results = run.results.slice(0, run.results.length - drop);
    run.omitted += drop;
  }
  return { view: 'run', run };
}

/** Never rejects. */
export async function answerTestsRequest(deps: { pool: DatabasePool; logger: Logger }, request: Request): Promise<Response> {
  try {
    const answer = fit(await answerOf(deps.pool, request));
    if (request.query.view === 'quarantine.add' || request.query.view === 'quarantine.remove') {
      deps.logger.info({ orgId: request.orgId, by: request.actor, change: request.query.view, repository: request.query.repository ?? '(org)', suite: request.query.suite, name: request.query.name }, 'test quarantine changed');
    }
    return { type: 'tests.response', requestId: request.requestId, answer };
  } catch (error) {
    return { type: 'tests.response', requestId: request.requestId, error: errorOf(error, deps.logger, request) };
  }
}
