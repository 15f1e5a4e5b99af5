// The HTTP server factory for the relay and the orchestrator: fastify 5 with the TypeBox type
// provider, our validator compiler, request ids, health and metrics routes, and the one error
// mapping. Routes are added by the roles; this file owns only cross-cutting HTTP concerns.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage } from 'node:http';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type RawReplyDefaultExpression, type RawRequestDefaultExpression, type RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ErrorResponse } from '../../../schemas/http/error.ts';
import { UnavailableError, messageOf } from '../../../core/errors.ts';
import { LOG_REDACTED, isRedactedKey, type Logger } from '../../../core/logging.ts';
import type { SvcMetrics } from '../metrics.ts';
import { lingeringClientErrorHandler } from './client-error.ts';
import { mapError } from './error-mapping.ts';
import { installRequestMetrics } from './request-metrics.ts';
import { svcValidatorCompiler } from './validator.ts';

/** spec Limits: HTTP listeners' idle keep-alive is 130 seconds. */
export const KEEP_ALIVE_TIMEOUT_MS = 130_000;
/** Default body limit for ordinary JSON routes; the webhook route raises its own (25 MiB). */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export type SvcHttpServer = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface CreateHttpServerOptions {
  logger: Logger;
  /**
   * Serves `GET /metrics` from this registry and records every request on it
   * (`svc_http_requests_total`, `svc_http_request_duration_seconds`, see request-metrics.ts).
   */
  metrics?: SvcMetrics;
  /** Serve `GET /metrics` here (with `metrics`); false when a separate listener serves it. Default true. */
  metricsRoute?: boolean;
  bodyLimit?: number;
  keepAliveTimeout?: number;
  /** Register `GET /healthz`. Default true. */
  healthz?: boolean;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Honour a caller's `x-request-id` when it is a plain token (it ends up in logs); else mint one. */
function requestIdOf(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

function pathOnly(url: string): string {
  // Query strings can carry tokens; keep them out of messages.
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

const EXTRA_SECRET_PARAMS = new Set(['code', 'sig', 'state']);

/** The request URL for logs, with values of secret-looking query parameters censored. */
export function scrubUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq === -1) return pair;
      let name = pair.slice(0, eq);
      try {
        name = decodeURIComponent(name);
      } catch {
        // keep the raw name
      }
      return isRedactedKey(name) || EXTRA_SECRET_PARAMS.has(name.toLowerCase()) ? `${pair.slice(0, eq)}=${LOG_REDACTED}` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}

interface RequestLike {
  method?: string;
  url?: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

export function createHttpServer(options: CreateHttpServerOptions): SvcHttpServer {
  // fastify lets the instance's serializers win over its own: log URLs without query secrets.
  const logger = options.logger.child(
    {},
    {
      serializers: {
        req: (req: RequestLike) => ({
          method: req.method,
          url: scrubUrl(req.url ?? ''),
          host: req.host,
          remoteAddress: req.ip,
          remotePort: req.socket?.remotePort,
        }),
      },
    },
  );
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    keepAliveTimeout: options.keepAliveTimeout ?? KEEP_ALIVE_TIMEOUT_MS,
    requestIdHeader: false,
    genReqId: requestIdOf,
    // Compare paths exactly; a trailing slash is a different route.
    routerOptions: { ignoreTrailingSlash: false },
    clientErrorHandler: lingeringClientErrorHandler(logger),
    // The router's own refusals (a path parameter too long, bad percent-encoding) get the same
    // error body as every other refusal, not fastify's bare one.
    frameworkErrors: (error, request, reply) => {
      const mapped = mapError(error, { requestId: request.id });
      if (mapped.internal) request.log.error({ err: error }, 'internal error');
      else request.log.info({ code: mapped.body.error.code, status: mapped.status }, messageOf(error));
      // No onRequest hook ran: the request id header is set here.
      void (reply as FastifyReply).code(mapped.status).header('x-request-id', request.id).headers(mapped.headers).type('application/json; charset=utf-8').send(mapped.body);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(svcValidatorCompiler);
  app.addSchema({ ...ErrorResponse, $id: 'SvcErrorResponse' });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  app.setErrorHandler((error, request, reply) => {
    const mapped = mapError(error, { requestId: request.id, bodyLimit: request.routeOptions.bodyLimit });
    if (mapped.internal) request.log.error({ err: error }, 'internal error');
    else request.log.info({ code: mapped.body.error.code, status: mapped.status }, messageOf(error));
    void reply.code(mapped.status).headers(mapped.headers).type('application/json; charset=utf-8').send(mapped.body);
  });

  app.setNotFoundHandler((request, reply) => {
    const body: ErrorResponse = {
      error: { code: 'SVC_ERR_HTTP_NOT_FOUND', message: `no route for ${request.method} ${pathOnly(request.url)}` },
    };
    void reply.code(404).send(body);
  });

  if (options.healthz !== false) {
    app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' as const }));
  }
  const metrics = options.metrics;
  if (metrics) installRequestMetrics(app, metrics);
  if (metrics && options.metricsRoute !== false) serveMetrics(app as unknown as SvcHttpServer, metrics);
  // pino's Logger is a FastifyBaseLogger; widen so route plugins typed for fastify's base fit.
  return app as unknown as SvcHttpServer;
}

/** `GET /metrics`: the text exposition of `metrics`' registry. */
function serveMetrics(app: SvcHttpServer, metrics: SvcMetrics): void {
  app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) => {
    const text = await metrics.text();
    return reply.type(metrics.contentType).send(text);
  });
}

/**
 * A listener of its own for `GET /metrics` (config `metrics.port`): scrapers reach it on a port
 * the public listener does not share. Requests to it are not counted in the request metrics.
 */
export async function startMetricsListener(options: { logger: Logger; metrics: SvcMetrics; port: number; host: string }): Promise<{ url: string; close(): Promise<void> }> {
  const app = createHttpServer({ logger: options.logger });
  serveMetrics(app, options.metrics);
  try {
    const bound = await listen(app, { port: options.port, host: options.host });
    return { url: bound.url, close: () => app.close() };
  } catch (error) {
    await app.close();
    throw error;
  }
}

export interface ListenOptions {
  port: number;
  /** Interface to bind; defaults to loopback. Servers that take outside traffic pass `0.0.0.0`. */
  host?: string;
}

export interface BoundAddress {
  host: string;
  port: number;
  /** `http://host:port`, for the "ready" line and for tests. */
  url: string;
}

/** Start listening; resolves with the bound address (port 0 picks a free port). */
export async function listen(app: FastifyInstance<any, any, any, any, any>, options: ListenOptions): Promise<BoundAddress> {
  const host = options.host ?? '127.0.0.1';
  try {
    await app.listen({ port: options.port, host });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE' ? 'is already in use' : code === 'EACCES' ? 'needs privileges this process does not have' : `could not be bound (${messageOf(error)})`;
    throw new UnavailableError('SVC_ERR_HTTP_LISTEN_FAILED', `port ${options.port} on ${host} ${why}`, { cause: error, details: { port: options.port, host } });
  }
  const address = app.server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { host: address.address, port: address.port, url: `http://${shownHost}:${address.port}` };
}
