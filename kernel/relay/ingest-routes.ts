// Webhook ingest: `POST /webhook/:orgId/:providerKind` and `POST /webhook/:orgId/generic/:sourceId`.
// Admission (size, rate limits, org and routing key, negative cache) is decided in `onRequest`,
// before a byte of the body is read. The body is then taken as raw bytes (never re-serialized),
// deduplicated, offered to the org's orchestrators, and — when none acks in time — committed
// to the durable buffer before the provider is told `buffered`. Statuses: spec "Webhook ingest
// status codes", row by row.
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import type { RelaySource, WebhookAck, WebhookDeliver } from '../../schemas/wire/relay.ts';
import type { SvcHttpServer } from '../services/http/index.ts';
import type { BufferStore } from './buffer-store.ts';
import type { DedupWindow } from './dedup-window.ts';
import type { OrchestratorPool } from './orchestrator-pool.ts';
import type { RelayMetrics, WebhookOutcome } from './relay-metrics.ts';
import type { NegativeCache, RoutingTable } from './routing-table.ts';
import type { TokenBuckets } from './token-buckets.ts';
import { MAX_WEBHOOK_BYTES, deliveryIdOf, forwardedHeaders, routingKeyOf } from './webhook-request.ts';

/** spec Limits: "Buffered-delivery 503 retry hint". */
export const BUFFER_FULL_RETRY_AFTER_SECONDS = 5;
const PROVIDER_KIND = /^[a-z][a-z0-9-]{0,39}$/;
const SOURCE_ID = /^[\x21-\x7e]{1,200}$/;

export interface IngestOptions {
  routing: RoutingTable;
  negativeCache: NegativeCache;
  pool: OrchestratorPool;
  buffer: BufferStore;
  dedup: DedupWindow;
  buckets: TokenBuckets;
  metrics: RelayMetrics;
  logger: Logger;
  rateLimitPerOrgRpm: number;
  rateLimitPerIpRpm: number;
  ackTimeoutMs: number;
  totalBudgetMs: number;
  /** Retry-After for `shed_retry_later` acks that name none. */
  shedRetryAfterSeconds: number;
}

interface Admission {
  arrival: number;
  orgId: string;
  providerKind: string;
  sourceId: string | undefined;
  routingKey: string;
  source: RelaySource;
}

interface WebhookParams {
  orgId: string;
  providerKind?: string;
  sourceId?: string;
}

export function registerIngestRoutes(app: SvcHttpServer, options: IngestOptions): void {
  const { routing, negativeCache, pool, buffer, dedup, buckets, metrics } = options;
  const admissions = new WeakMap<IncomingMessage, Admission>();

  const count = (outcome: WebhookOutcome): void => metrics.webhooks.inc({ outcome });

  function refuse(reply: FastifyReply, status: number, code: string, message: string, extra: { retryAfter?: number; close?: boolean } = {}): FastifyReply {
    if (extra.retryAfter !== undefined) void reply.header('retry-after', String(extra.retryAfter));
    // The body was never read: do not let the client keep uploading into a kept-alive socket.
    if (extra.close) void reply.header('connection', 'close');
    return reply.code(status).type('application/json; charset=utf-8').send({ error: { code, message } });
  }

  async function admit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const arrival = Date.now();
    const params = request.params as WebhookParams;
    const orgId = params.orgId;
    const generic = params.sourceId !== undefined;
    const providerKind = generic ? 'generic' : (params.providerKind ?? '');
    const close = { close: true };

    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > MAX_WEBHOOK_BYTES) {
      count('too_large');
      return void refuse(reply, 413, 'SVC_ERR_HTTP_BODY_TOO_LARGE', `webhook body of ${declared} bytes is larger than the limit of ${MAX_WEBHOOK_BYTES} bytes`, close);
    }
    const byIp = buckets.take(`ip\0${request.ip}`, options.rateLimitPerIpRpm, arrival);
    if (!byIp.ok) {
      count('rate_limited');
      metrics.shed.inc({ reason: 'rate_limit_ip' });
      return void refuse(reply, 429, 'SVC_ERR_RELAY_RATE_LIMITED', 'too many webhooks from this client address; retry later', { ...close, retryAfter: byIp.retryAfterSeconds });
    }
    if (!routing.hasOrg(orgId)) {
      count('unknown_org');
      return void refuse(reply, 404, 'SVC_ERR_RELAY_UNKNOWN_ORG', `org "${orgId}" has no registered source at this relay`, close);
    }
    const byOrg = buckets.take(`org\0${orgId}`, options.rateLimitPerOrgRpm, arrival);
    if (!byOrg.ok) {
      count('rate_limited');
      metrics.shed.inc({ reason: 'rate_limit_org' });
      return void refuse(reply, 429, 'SVC_ERR_RELAY_RATE_LIMITED', `too many webhooks for org "${orgId}"; retry later`, { ...close, retryAfter: byOrg.retryAfterSeconds });
    }
    const validPath = generic ? SOURCE_ID.test(params.sourceId ?? '') : PROVIDER_KIND.test(providerKind) && providerKind !== 'generic';
    const routingKey = routingKeyOf(providerKind, params.sourceId, request.headers);
    if (!validPath || negativeCache.has(orgId, routingKey)) {
      count('unknown_source');
      return void refuse(reply, 404, 'SVC_ERR_RELAY_UNKNOWN_SOURCE', `no source is registered for routing key "${routingKey}" in org "${orgId}"`, close);
    }
    const source = routing.lookup(orgId, routingKey, providerKind);
    if (source === undefined) {
      negativeCache.add(orgId, routingKey);
      count('unknown_source');
      return void refuse(reply, 404, 'SVC_ERR_RELAY_UNKNOWN_SOURCE', `no source is registered for routing key "${routingKey}" in org "${orgId}"`, close);
    }
    if (source.rateLimitRpm !== undefined) {
      const bySource = buckets.take(`src\0${orgId}\0${source.routingKey}`, source.rateLimitRpm, arrival);
      if (!bySource.ok) {
        count('rate_limited');
        metrics.shed.inc({ reason: 'rate_limit_source' });
        return void refuse(reply, 429, 'SVC_ERR_RELAY_RATE_LIMITED', `too many webhooks for source "${routingKey}"; retry later`, { ...close, retryAfter: bySource.retryAfterSeconds });
      }
    }
    if (source.maxPayloadBytes !== undefined && Number.isFinite(declared) && declared > source.maxPayloadBytes) {
      count('too_large');
      return void refuse(reply, 413, 'SVC_ERR_HTTP_BODY_TOO_LARGE', `webhook body of ${declared} bytes is larger than this source's limit of ${source.maxPayloadBytes} bytes`, close);
    }
    admissions.set(request.raw, { arrival, orgId, providerKind, sourceId: params.sourceId, routingKey, source });
  }

  function answerAck(reply: FastifyReply, admission: Admission, ack: WebhookAck): FastifyReply {
    count(ack.result);
    switch (ack.result) {
      case 'accepted':
        return reply.code(200).send({ status: 'accepted' });
      case 'duplicate':
        return reply.code(200).send({ status: 'duplicate' });
      case 'rejected_signature':
        return refuse(reply, 401, 'SVC_ERR_RELAY_SIGNATURE_REJECTED', ack.message ?? 'the webhook signature does not verify against the source secret');
      case 'rejected_unknown_source':
        negativeCache.add(admission.orgId, admission.routingKey);
        return refuse(reply, 404, 'SVC_ERR_RELAY_UNKNOWN_SOURCE', ack.message ?? `the orchestrator knows no source for routing key "${admission.routingKey}"`);
      case 'rejected_misconfigured':
        return refuse(reply, 500, 'SVC_ERR_RELAY_SOURCE_MISCONFIGURED', ack.message ?? 'the source is misconfigured at the orchestrator');
      case 'shed_retry_later':
        metrics.shed.inc({ reason: 'orchestrator' });
        return refuse(reply, 429, 'SVC_ERR_RELAY_SHED', ack.message ?? 'the orchestrator is shedding load; retry later', {
          retryAfter: ack.retryAfterSeconds ?? options.shedRetryAfterSeconds,
        });
    }
  }

  async function handle(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const admission = admissions.get(request.raw);
    if (admission === undefined) throw new Error('webhook handler reached without admission');
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const { orgId, routingKey, source } = admission;
    if (source.maxPayloadBytes !== undefined && body.length > source.maxPayloadBytes) {
      count('too_large');
      return refuse(reply, 413, 'SVC_ERR_HTTP_BODY_TOO_LARGE', `webhook body of ${body.length} bytes is larger than this source's limit of ${source.maxPayloadBytes} bytes`);
    }
    const { deliveryId, fromProvider } = deliveryIdOf(request.headers, admission.sourceId !== undefined);
    const keys = [`body\0${orgId}\0${routingKey}\0${createHash('sha256').update(body).digest('base64')}`];
    if (fromProvider) keys.push(`id\0${orgId}\0${routingKey}\0${deliveryId}`);
    const claim = await dedup.claim(keys);
    if (claim.kind === 'duplicate') {
      count('relay_duplicate');
      request.log.info({ orgId, routingKey, deliveryId }, 'duplicate webhook inside the dedup window; not relayed');
      return reply.code(200).send({ status: 'duplicate' });
    }

    let answered200 = false;
    try {
      const headers = forwardedHeaders(request.headers);
      const receivedAt = new Date(admission.arrival);
      const message: WebhookDeliver = {
        type: 'webhook.deliver',
        deliveryRef: randomUUID(),
        orgId,
        routingKey,
        providerKind: admission.providerKind,
        ...(admission.sourceId === undefined ? {} : { sourceId: admission.sourceId }),
        deliveryId,
        headers,
        bodyBase64: body.toString('base64'),
        receivedAt: receivedAt.toISOString(),
        clientIp: request.ip,
        replay: false,
      };
      const ack = await pool.deliver(orgId, message, options.ackTimeoutMs, admission.arrival + options.totalBudgetMs);
      if (ack !== undefined) {
        answered200 = ack.result === 'accepted' || ack.result === 'duplicate';
        return answerAck(reply, admission, ack);
      }

      // Nobody took it in time: commit it to the buffer, then (only then) answer 200.
      let stored: boolean;
      try {
        stored = await buffer.insert({ orgId, routingKey, providerKind: admission.providerKind, sourceId: admission.sourceId, deliveryId, headers, body, clientIp: request.ip, receivedAt });
      } catch (error) {
        request.log.error({ err: error, orgId, deliveryId }, 'webhook could not be buffered');
        count('buffer_full');
        return refuse(reply, 503, 'SVC_ERR_RELAY_BUFFER_UNAVAILABLE', 'the relay cannot store this delivery right now; retry later', {
          retryAfter: BUFFER_FULL_RETRY_AFTER_SECONDS,
        });
      }
      if (!stored) {
        count('buffer_full');
        metrics.shed.inc({ reason: 'buffer_full' });
        request.log.warn({ orgId, deliveryId, buffered: buffer.count(orgId) }, 'buffer budget exhausted; webhook refused');
        return refuse(reply, 503, 'SVC_ERR_RELAY_BUFFER_FULL', `the relay's buffer for org "${orgId}" is full; retry later`, {
          retryAfter: BUFFER_FULL_RETRY_AFTER_SECONDS,
        });
      }
      answered200 = true;
      count('buffered');
      request.log.info({ orgId, routingKey, deliveryId }, 'no orchestrator acked in time; webhook buffered');
      return reply.code(200).send({ status: 'buffered' });
    } finally {
      claim.settle(answered200);
    }
  }

  void app.register(async (scope) => {
    // Raw bytes for every content type: the orchestrator verifies signatures over them.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_WEBHOOK_BYTES }, (_request, body, done) => done(null, body));
    // A body that outgrows the limit while streaming (no or a false Content-Length) ends here.
    scope.addHook('onError', async (_request, _reply, error) => {
      if ((error as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') count('too_large');
    });
    const route = { bodyLimit: MAX_WEBHOOK_BYTES, onRequest: admit };
    scope.post('/webhook/:orgId/:providerKind', route, handle);
    scope.post('/webhook/:orgId/generic/:sourceId', route, handle);
  });
}
