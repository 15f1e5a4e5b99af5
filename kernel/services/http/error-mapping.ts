// The one place errors become HTTP responses (architecture: "Errors"). SvcError kinds map to
// statuses; fastify's own request errors get stable SVC_ERR_HTTP_* codes; anything else is an
// internal error whose details stay in the log.
import type { ErrorResponse } from '../../../schemas/http/error.ts';
import type { ValidationIssue } from '../../../schemas/validate.ts';
import { isSvcError, type ErrorKind } from '../../../core/errors.ts';

export const STATUS_BY_KIND: Readonly<Record<ErrorKind, number>> = Object.freeze({
  input: 400,
  authentication: 401,
  not_allowed: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
});

export interface MappedError {
  status: number;
  body: ErrorResponse;
  /** True when the response hides the real error: log it with its stack. */
  internal: boolean;
  headers: Record<string, string>;
}

interface FastifyishError {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  validation?: unknown;
  validationContext?: unknown;
}

function body(code: string, message: string, issues?: ValidationIssue[]): ErrorResponse {
  return issues && issues.length > 0 ? { error: { code, message, issues } } : { error: { code, message } };
}

function issuesOf(details: Record<string, unknown> | undefined): ValidationIssue[] | undefined {
  const issues = details?.['issues'];
  if (!Array.isArray(issues)) return undefined;
  return issues
    .filter((i): i is ValidationIssue => typeof i === 'object' && i !== null && typeof i.path === 'string' && typeof i.message === 'string')
    .map((i) => ({ path: i.path, message: i.message }));
}

export interface MapContext {
  requestId: string;
  /** Body limit of the route, for the 413 message. */
  bodyLimit?: number;
}

export function mapError(error: unknown, context: MapContext): MappedError {
  const internalMessage = `internal error (request ${context.requestId})`;
  if (isSvcError(error)) {
    const status = STATUS_BY_KIND[error.kind];
    const headers: Record<string, string> = {};
    const retryAfter = error.details?.['retryAfterSeconds'];
    if (typeof retryAfter === 'number' && retryAfter >= 0) headers['retry-after'] = String(Math.ceil(retryAfter));
    if (error.kind === 'internal') return { status, body: body(error.code, internalMessage), internal: true, headers };
    return { status, body: body(error.code, error.message, issuesOf(error.details)), internal: false, headers };
  }

  const e = (typeof error === 'object' && error !== null ? error : {}) as FastifyishError;
  const code = typeof e.code === 'string' ? e.code : '';
  const statusCode = typeof e.statusCode === 'number' ? e.statusCode : 500;
  const message = typeof e.message === 'string' ? e.message : '';

  // The router's refusals (fastify's frameworkErrors): a path parameter past the router's
  // length limit, or one whose percent-encoding does not decode. Their messages quote the whole
  // path; ours name the problem.
  if (code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return { status: 414, body: body('SVC_ERR_HTTP_INVALID_PARAMS', 'a path parameter is longer than the server accepts'), internal: false, headers: {} };
  }
  if (code === 'FST_ERR_BAD_URL') {
    return { status: 400, body: body('SVC_ERR_HTTP_INVALID_PARAMS', 'a path parameter is not valid percent-encoding'), internal: false, headers: {} };
  }
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE' || statusCode === 413) {
    const limit = context.bodyLimit === undefined ? '' : ` of ${context.bodyLimit} bytes`;
    return { status: 413, body: body('SVC_ERR_HTTP_BODY_TOO_LARGE', `request body is larger than the limit${limit}`), internal: false, headers: {} };
  }
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || (error instanceof SyntaxError && statusCode === 400)) {
    return { status: 400, body: body('SVC_ERR_HTTP_MALFORMED_JSON', `request body is not valid JSON: ${message}`), internal: false, headers: {} };
  }
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || statusCode === 415) {
    return { status: 415, body: body('SVC_ERR_HTTP_UNSUPPORTED_MEDIA_TYPE', message || 'unsupported content type'), internal: false, headers: {} };
  }
  if (Array.isArray(e.validation)) {
    // A validator other than ours (e.g. a route that brought its own compiler).
    return { status: 400, body: body('SVC_ERR_HTTP_INVALID_BODY', message || 'request does not match its schema'), internal: false, headers: {} };
  }
  if (statusCode >= 400 && statusCode < 500) {
    const svcCode = statusCode === 404 ? 'SVC_ERR_HTTP_NOT_FOUND' : statusCode === 405 ? 'SVC_ERR_HTTP_METHOD_NOT_ALLOWED' : 'SVC_ERR_HTTP_BAD_REQUEST';
    return { status: statusCode, body: body(svcCode, message || 'bad request'), internal: false, headers: {} };
  }
  return { status: 500, body: body('SVC_ERR_INTERNAL', internalMessage), internal: true, headers: {} };
}
