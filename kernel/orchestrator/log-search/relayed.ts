// `logs.search.request` from the relay (svc logs search, the dashboard's search box): one search
// per request, always answered with exactly one `logs.search.response`.
import type { Logger } from 'pino';
import type { Static } from 'typebox';
import { isSvcError } from '../../../core/errors.ts';
import type { DashboardError, LogSearchRequest, LogSearchResponse } from '../../../schemas/wire/relay.ts';
import type { DatabasePool } from '../../services/db/index.ts';
import { STATUS_BY_KIND } from '../../services/http/index.ts';
import { searchLogs } from './search.ts';

type Request = Static<typeof LogSearchRequest>;
type Response = Static<typeof LogSearchResponse>;

/** A relay frame holds 4 MiB; 500 lines of up to 8 KiB with context could pass it, so long texts are cut. */
const MAX_ANSWER_BYTES = 3 * 1024 * 1024;
const CUT_TEXT = 2000;

function errorOf(error: unknown, logger: Logger, request: Request): DashboardError {
  if (isSvcError(error) && error.kind !== 'internal') return { code: error.code, message: error.message.slice(0, 2000), status: STATUS_BY_KIND[error.kind] };
  logger.error({ err: error, orgId: request.orgId }, 'log search failed');
  return { code: 'SVC_ERR_INTERNAL', message: `the orchestrator could not answer logs.search.request (request ${request.requestId}); see its log`, status: 500 };
}

/** Never rejects. */
export async function answerLogSearchRequest(deps: { pool: DatabasePool; logger: Logger }, request: Request): Promise<Response> {
  try {
    let answer = await searchLogs(deps.pool, request.orgId, request.query);
    if (Buffer.byteLength(JSON.stringify(answer)) > MAX_ANSWER_BYTES) {
      const cut = (t: string) => (t.length > CUT_TEXT ? `${t.slice(0, CUT_TEXT)}…` : t);
      answer = { ...answer, hits: answer.hits.map((h) => ({ ...h, text: cut(h.text), before: h.before.map(cut), after: h.after.map(cut) })) };
    }
    return { type: 'logs.search.response', requestId: request.requestId, answer };
  } catch (error) {
    return { type: 'logs.search.response', requestId: request.requestId, error: errorOf(error, deps.logger, request) };
  }
}
