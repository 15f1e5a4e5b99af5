// HTTP request metrics for every server built by createHttpServer (orchestrator and relay): one
// onResponse hook, so no route records its own. Labels stay bounded: the route *pattern*
// (`/api/v1/runs/:id`, never the raw URL), a fixed method set and the status class.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { SvcMetrics } from '../metrics.ts';

/** Seconds; from sub-millisecond health checks to the relay's 8 s webhook budget and beyond. */
export const HTTP_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Route label of a request no route matched (404s, scanners): one series, whatever the URL. */
export const UNMATCHED_ROUTE = 'unmatched';

export function httpRequestMetrics(metrics: SvcMetrics) {
  return {
    requests: metrics.counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, by method, route pattern and status class (2xx, 4xx, ...).',
      labelNames: ['method', 'route', 'status_class'],
    }),
    duration: metrics.histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP request duration from arrival to the response sent, by method, route pattern and status class.',
      labelNames: ['method', 'route', 'status_class'],
      buckets: HTTP_DURATION_BUCKETS,
    }),
  };
}

export function statusClassOf(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'other';
}

/** The matched route's pattern; requests no route matched share one label value. */
export function routeLabelOf(request: FastifyRequest): string {
  const pattern = request.routeOptions.url;
  return request.is404 || pattern === undefined || pattern === '' ? UNMATCHED_ROUTE : pattern;
}

export function installRequestMetrics(app: FastifyInstance<any, any, any, any, any>, metrics: SvcMetrics): void {
  const m = httpRequestMetrics(metrics);
  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const labels = {
      method: METHODS.has(request.method) ? request.method : 'OTHER',
      route: routeLabelOf(request),
      status_class: statusClassOf(reply.statusCode),
    };
    m.requests.inc(labels);
    m.duration.observe(labels, reply.elapsedTime / 1000);
  });
}
