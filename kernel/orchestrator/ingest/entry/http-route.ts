// Independent mode (no `platform.url`): the orchestrator is its own ingest point and serves
// `POST /webhook/:orgId/:providerKind` and `POST /webhook/:orgId/generic/:sourceId` with the
// relay's status codes. It has no relay buffer, so it answers from the pipeline's result.
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AckResult } from '../../../../schemas/wire/relay.ts';
import { checkGenericSettings } from './generic.ts';
import type { IngestPipeline } from '../pipeline.ts';
import type { IncomingDelivery, IngestOutcome } from '../types.ts';

export const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024; // spec Limits: 413 above 25 MiB
const ID_SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const KIND_SEGMENT = /^[a-z][a-z0-9-]{0,39}$/;
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;

const STATUS: Record<AckResult, number> = {
  accepted: 200,
  duplicate: 200,
  rejected_signature: 401,
  rejected_unknown_source: 404,
  rejected_misconfigured: 500,
  shed_retry_later: 429,
};

function first(headers: FastifyRequest['headers'], names: readonly string[]): string | undefined {
  for (const name of names) {
    const raw = headers[name];
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

function flatHeaders(headers: FastifyRequest['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === 'host' || name === 'connection' || name === 'content-length') continue;
    out[name] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  return out;
}

function errorReply(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  return reply.code(status).send({ error: { code, message } });
}

export function replyFor(reply: FastifyReply, outcome: IngestOutcome): FastifyReply {
  const status = STATUS[outcome.result];
  if (outcome.result === 'shed_retry_later') reply.header('retry-after', String(outcome.retryAfterSeconds ?? 5));
  if (status !== 200) return errorReply(reply, status, `SVC_ERR_WEBHOOK_${outcome.result.toUpperCase()}`, outcome.message ?? outcome.result);
  return reply.code(200).send({ status: outcome.status, deliveryId: outcome.deliveryId, runIds: outcome.runIds });
}

/** Per generic source token buckets (`rateLimitRpm`), refilled continuously. */
class SourceBuckets {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  take(key: string, rpm: number, now = Date.now()): number | null {
    const bucket = this.#buckets.get(key) ?? { tokens: rpm, at: now };
    bucket.tokens = Math.min(rpm, bucket.tokens + ((now - bucket.at) / 60_000) * rpm);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return null;
    }
    return Math.max(1, Math.ceil(((1 - bucket.tokens) / rpm) * 60));
  }
}

export function webhookRoutes(pipeline: IngestPipeline) {
  const buckets = new SourceBuckets();
  return async function routes(app: FastifyInstance): Promise<void> {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_WEBHOOK_BYTES }, (_request, body, done) => done(null, body));

    const handle = async (request: FastifyRequest, reply: FastifyReply, orgId: string, providerKind: string, sourceId?: string) => {
      if (!ID_SEGMENT.test(orgId)) return errorReply(reply, 404, 'SVC_ERR_WEBHOOK_UNKNOWN_ORG', 'no such org');
      if (!KIND_SEGMENT.test(providerKind)) return errorReply(reply, 404, 'SVC_ERR_WEBHOOK_UNKNOWN_PROVIDER', 'no such provider kind');
      if (sourceId !== undefined && !ID_SEGMENT.test(sourceId)) return errorReply(reply, 404, 'SVC_ERR_WEBHOOK_REJECTED_UNKNOWN_SOURCE', 'no such source');
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const generic = sourceId !== undefined;
      const routingKey = generic ? `generic:${sourceId}` : `${providerKind}:${first(request.headers, ['x-provider-hook-installation-target-id', 'x-github-hook-installation-target-id']) ?? ''}`;
      if (generic) {
        // Per-source limits come before the pipeline, as the relay applies them.
        const lookup = await pipeline.sources.get(orgId, routingKey);
        if (lookup.ok) {
          const settings = checkGenericSettings(lookup.source.settings);
          if (settings.ok) {
            if (body.length > settings.settings.maxPayloadBytes) {
              return errorReply(reply, 413, 'SVC_ERR_WEBHOOK_TOO_LARGE', `payload of ${body.length} bytes is over this source's limit of ${settings.settings.maxPayloadBytes}`);
            }
            const wait = buckets.take(routingKey, settings.settings.rateLimitRpm);
            if (wait !== null) {
              reply.header('retry-after', String(wait));
              return errorReply(reply, 429, 'SVC_ERR_WEBHOOK_RATE_LIMITED', `source ${sourceId} is over its rate limit of ${settings.settings.rateLimitRpm} per minute`);
            }
          }
        }
      }
      const given = first(request.headers, generic ? ['x-provider-delivery', 'x-github-delivery', 'x-delivery-id', 'idempotency-key'] : ['x-provider-delivery', 'x-github-delivery']);
      const deliveryId = given !== undefined && DELIVERY_ID.test(given) ? given : randomUUID();
      const delivery: IncomingDelivery = {
        orgId,
        routingKey,
        providerKind: generic ? 'generic' : providerKind,
        ...(generic ? { sourceId } : {}),
        deliveryId,
        headers: flatHeaders(request.headers),
        body,
        receivedAt: new Date(),
        clientIp: request.ip,
        replay: false,
      };
      return replyFor(reply, await pipeline.ingestDelivery(delivery));
    };

    app.post<{ Params: { orgId: string; sourceId: string } }>('/webhook/:orgId/generic/:sourceId', (request, reply) =>
      handle(request, reply, request.params.orgId, 'generic', request.params.sourceId),
    );
    app.post<{ Params: { orgId: string; providerKind: string } }>('/webhook/:orgId/:providerKind', (request, reply) =>
      handle(request, reply, request.params.orgId, request.params.providerKind),
    );
  };
}
