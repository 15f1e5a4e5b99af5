// The relay's side of the webhook front door (kernel/webhook): its gate is the routing table and
// the negative cache; an admitted delivery is deduplicated, offered to the org's orchestrators,
// and — when none acks in time — committed to the durable buffer before the provider is told
// `buffered`. Statuses: spec "Webhook ingest status codes", from kernel/webhook/status-codes.ts.
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { NO_TRACING, nowMs, TraceSteps, type TraceSpan, type Tracing } from '../../core/tracing/index.ts';
import type { RelaySource, WebhookAck, WebhookDeliver } from '../../schemas/wire/relay.ts';
import type { SvcHttpServer } from '../services/http/index.ts';
import { webhookFrontDoor, type DoorRefusal, type InboundWebhook, type LimitHit, type WebhookAnswer, type WebhookGate } from '../webhook/front-door.ts';
import { forwardedHeaders } from '../webhook/parse-request.ts';
import { IngressLimiter } from '../webhook/rate-limiter.ts';
import { ROW_OF_ACK } from '../webhook/status-codes.ts';
import type { BufferStore } from './buffer-store.ts';
import type { DedupWindow } from './dedup-window.ts';
import type { OrchestratorPool } from './orchestrator-pool.ts';
import type { RelayMetrics, WebhookOutcome } from './relay-metrics.ts';
import type { NegativeCache, RoutingTable } from './routing-table.ts';

export { BUFFER_FULL_RETRY_AFTER_SECONDS } from '../webhook/status-codes.ts';

export interface IngestOptions {
  routing: RoutingTable;
  negativeCache: NegativeCache;
  pool: OrchestratorPool;
  buffer: BufferStore;
  dedup: DedupWindow;
  metrics: RelayMetrics;
  logger: Logger;
  rateLimitPerOrgRpm: number;
  rateLimitPerIpRpm: number;
  ackTimeoutMs: number;
  totalBudgetMs: number;
  /** Retry-After for `shed_retry_later` acks that name none. */
  shedRetryAfterSeconds: number;
  /** Spans of each delivery (docs/tracing.md); default none. */
  tracing?: Tracing;
}

// Answers are constants: nothing is allocated for them per delivery.
const ACCEPTED: WebhookAnswer = { status: 200, body: { status: 'accepted' } };
const DUPLICATE: WebhookAnswer = { status: 200, body: { status: 'duplicate' } };
const BUFFERED: WebhookAnswer = { status: 200, body: { status: 'buffered' } };

const OUTCOME_OF_REFUSAL: Record<DoorRefusal, WebhookOutcome> = {
  bodyTooLarge: 'too_large',
  rateLimited: 'rate_limited',
  unknownOrg: 'unknown_org',
  unknownSource: 'unknown_source',
};
const SHED_REASON_OF_LIMIT: Record<LimitHit, string> = { client: 'rate_limit_ip', org: 'rate_limit_org', source: 'rate_limit_source' };

export function registerIngestRoutes(app: SvcHttpServer, options: IngestOptions): void {
  const { routing, negativeCache, pool, buffer, dedup, metrics } = options;
  const count = (outcome: WebhookOutcome): void => metrics.webhooks.inc({ outcome });

  const gate: WebhookGate<RelaySource> = {
    hasOrg: (orgId) => routing.hasOrg(orgId),
    source(orgId, routingKey, providerKind) {
      if (negativeCache.has(orgId, routingKey)) return undefined;
      const source = routing.lookup(orgId, routingKey, providerKind);
      if (source === undefined) negativeCache.add(orgId, routingKey);
      return source;
    },
  };

  function answerAck(webhook: InboundWebhook<RelaySource>, ack: WebhookAck): WebhookAnswer {
    count(ack.result);
    const row = ROW_OF_ACK[ack.result];
    if (row === 'accepted') return ACCEPTED;
    if (row === 'duplicate') return DUPLICATE;
    if (row === 'unknownSource') negativeCache.add(webhook.orgId, webhook.routingKey);
    if (row === 'shed') {
      metrics.shed.inc({ reason: 'orchestrator' });
      return { refusal: row, ...(ack.message === undefined ? {} : { message: ack.message }), retryAfterSeconds: ack.retryAfterSeconds ?? options.shedRetryAfterSeconds };
    }
    return ack.message === undefined ? { refusal: row } : { refusal: row, message: ack.message };
  }

  /** Nobody took it in time: commit it to the buffer, then (only then) answer 200. */
  async function toBuffer(webhook: InboundWebhook<RelaySource>, request: FastifyRequest, headers: Record<string, string>, receivedAt: Date): Promise<WebhookAnswer> {
    const { orgId, routingKey, deliveryId } = webhook;
    let stored: boolean;
    try {
      stored = await buffer.insert({ orgId, routingKey, providerKind: webhook.providerKind, sourceId: webhook.sourceId, deliveryId, headers, body: webhook.body, clientIp: request.ip, receivedAt });
    } catch (error) {
      request.log.error({ err: error, orgId, deliveryId }, 'webhook could not be buffered');
      count('buffer_full');
      return { refusal: 'bufferUnavailable' };
    }
    if (!stored) {
      count('buffer_full');
      metrics.shed.inc({ reason: 'buffer_full' });
      request.log.warn({ orgId, deliveryId, buffered: buffer.count(orgId) }, 'buffer budget exhausted; webhook refused');
      return { refusal: 'bufferFull', message: `the relay's buffer for org "${orgId}" is full; retry later` };
    }
    count('buffered');
    request.log.info({ orgId, routingKey, deliveryId }, 'no orchestrator acked in time; webhook buffered');
    return BUFFERED;
  }

  const tracing = options.tracing ?? NO_TRACING;

  /** The delivery's root span (the trace's first): front door, dedup, forward or buffer as children. */
  function receiveSpan(webhook: InboundWebhook<RelaySource>, request: FastifyRequest): { root: TraceSpan; steps: TraceSteps; admitted: number } {
    const root = tracing.start('webhook receive', {
      kind: 'server',
      root: true,
      start: webhook.arrival,
      attributes: { 'svc.org.id': webhook.orgId, 'svc.delivery.id': webhook.deliveryId, 'svc.routing_key': webhook.routingKey, 'vcs.provider.name': webhook.providerKind, 'http.request.method': request.method, 'http.route': request.routeOptions.url },
    });
    // Body read, rate limits and routing happened before `handle`: one span from arrival to here.
    const admitted = nowMs();
    const steps = new TraceSteps(tracing, root, 'relay');
    steps.step('admission', webhook.arrival, admitted);
    return { root, steps, admitted };
  }

  async function handle(webhook: InboundWebhook<RelaySource>, request: FastifyRequest): Promise<WebhookAnswer> {
    const traced = tracing.enabled ? receiveSpan(webhook, request) : undefined;
    const root = traced?.root;
    const steps = traced?.steps;
    // Where the last step of the delivery ended: the answer is a step of its own from there.
    const marks = { last: traced?.admitted ?? 0 };
    try {
      const answer = await handleTraced(webhook, request, root, steps, marks);
      root?.setAttributes({ 'svc.relay.answer': 'status' in answer ? String((answer.body as { status?: string }).status) : answer.refusal });
      return answer;
    } finally {
      if (root !== undefined && steps !== undefined) {
        const end = nowMs();
        steps.step('answer', marks.last, end);
        steps.flush();
        root.end(end);
      }
    }
  }

  /** `marks.last`: where the previous step ended (each step starts where the last ended: the SDK's own time is inside one); kept up to date here. */
  async function handleTraced(webhook: InboundWebhook<RelaySource>, request: FastifyRequest, root: TraceSpan | undefined, steps: TraceSteps | undefined, marks: { last: number }): Promise<WebhookAnswer> {
    const { orgId, routingKey, deliveryId, body } = webhook;
    const dedupStart = marks.last;
    const keys = [`body\0${orgId}\0${routingKey}\0${createHash('sha256').update(body).digest('base64')}`];
    if (webhook.deliveryIdFromProvider) keys.push(`id\0${orgId}\0${routingKey}\0${deliveryId}`);
    const claim = await dedup.claim(keys);
    const deduped = root === undefined ? 0 : nowMs();
    if (steps !== undefined) {
      steps.step('dedup', dedupStart, deduped, { 'svc.dedup.result': claim.kind });
      marks.last = deduped;
    }
    if (claim.kind === 'duplicate') {
      count('relay_duplicate');
      request.log.info({ orgId, routingKey, deliveryId }, 'duplicate webhook inside the dedup window; not relayed');
      return DUPLICATE;
    }

    let answer: WebhookAnswer | undefined;
    try {
      const headers = forwardedHeaders(request.headers);
      const receivedAt = new Date(webhook.arrival);
      const message: WebhookDeliver = {
        type: 'webhook.deliver',
        deliveryRef: randomUUID(),
        orgId,
        routingKey,
        providerKind: webhook.providerKind,
        ...(webhook.sourceId === undefined ? {} : { sourceId: webhook.sourceId }),
        deliveryId,
        headers,
        bodyBase64: body.toString('base64'),
        receivedAt: receivedAt.toISOString(),
        clientIp: request.ip,
        replay: false,
      };
      metrics.forwardSeconds.observe((Date.now() - webhook.arrival) / 1000);
      // The orchestrator's ingest span is a child of this one (the message's traceparent).
      const forward = root === undefined ? undefined : tracing.start('relay forward', { kind: 'producer', parent: root, start: deduped });
      // A delivery the sampler declined still says so (the sampled flag off): the orchestrator then
      // records nothing of it rather than starting a trace of its own.
      const traceparent = forward?.traceparent ?? root?.propagate;
      if (traceparent !== undefined) message.traceparent = traceparent;
      const ack = await pool.deliver(orgId, message, options.ackTimeoutMs, webhook.arrival + options.totalBudgetMs);
      forward?.setAttributes({ 'svc.ack.result': ack?.result ?? 'none' });
      if (forward !== undefined) {
        marks.last = nowMs();
        forward.end(marks.last);
      }
      if (ack === undefined && root !== undefined) {
        const bufferStart = marks.last;
        answer = await toBuffer(webhook, request, headers, receivedAt);
        marks.last = nowMs();
        steps?.step('buffer', bufferStart, marks.last);
      } else answer = ack === undefined ? await toBuffer(webhook, request, headers, receivedAt) : answerAck(webhook, ack);
      return answer;
    } finally {
      // Only a 200 (accepted, duplicate, buffered) makes the keys seen: a refused delivery may come back corrected.
      claim.settle(answer !== undefined && 'status' in answer);
    }
  }

  void app.register(
    webhookFrontDoor<RelaySource>({
      gate,
      limiter: new IngressLimiter({ perOrgRpm: options.rateLimitPerOrgRpm, perIpRpm: options.rateLimitPerIpRpm }),
      handle,
      onRefused(refusal, limit) {
        count(OUTCOME_OF_REFUSAL[refusal]);
        if (limit !== undefined) metrics.shed.inc({ reason: SHED_REASON_OF_LIMIT[limit] });
      },
    }),
  );
}
