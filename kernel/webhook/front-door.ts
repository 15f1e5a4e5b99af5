// The one webhook front door: `POST /webhook/:orgId/:providerKind` and
// `POST /webhook/:orgId/generic/:sourceId`, served by the relay and by an orchestrator in
// independent mode. Admission (declared size, client and org rate limits, known org, routing key,
// the source's own limits) is decided in `onRequest`, before a byte of the body is read; the body
// is then taken as raw bytes (never re-serialized: signatures are over them) and handed to the
// role's `handle`, whose answer is sent from the status table (./status-codes.ts).
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IngressLimiter } from './rate-limiter.ts';
import { MAX_WEBHOOK_BYTES, declaredLength, deliveryIdOf, isValidOrgId, isValidSourcePath, routingKeyOf, type WebhookParams } from './parse-request.ts';
import { WEBHOOK_REFUSALS, type WebhookRefusal } from './status-codes.ts';

/** Retry-After for a row that takes one from its answer when the answer brought none. */
const FALLBACK_RETRY_AFTER_SECONDS = 5;
const EMPTY = Buffer.alloc(0);

/** What the front door needs of a source: its routing key and its own limits, if any. */
export interface WebhookSourceLimits {
  readonly routingKey: string;
  readonly maxPayloadBytes?: number;
  readonly rateLimitRpm?: number;
}

/**
 * The role's view of orgs and sources. Either answer may be synchronous (the relay's routing table
 * is in memory: no extra turn on its hot path) or a promise (the orchestrator's cached lookups).
 */
export interface WebhookGate<S extends WebhookSourceLimits> {
  hasOrg(orgId: string): boolean | Promise<boolean>;
  /** The source the routing key names, or undefined (answered 404, unknown source). */
  source(orgId: string, routingKey: string, providerKind: string): S | undefined | Promise<S | undefined>;
}

/** An admitted webhook with its body, as the role's `handle` receives it. */
export interface InboundWebhook<S> {
  /** Arrival time, ms since the epoch (budgets count from here). */
  readonly arrival: number;
  readonly orgId: string;
  /** `generic` for generic sources. */
  readonly providerKind: string;
  readonly sourceId: string | undefined;
  readonly routingKey: string;
  readonly source: S;
  body: Buffer;
  deliveryId: string;
  /** False when the id is a generated UUID (then it cannot identify a resend). */
  deliveryIdFromProvider: boolean;
}

export type WebhookAnswer =
  | { readonly status: 200; readonly body: object }
  | { readonly refusal: WebhookRefusal; readonly message?: string; readonly retryAfterSeconds?: number };

/** Refusals the front door makes itself, before `handle`. */
export type DoorRefusal = 'bodyTooLarge' | 'rateLimited' | 'unknownOrg' | 'unknownSource';
export type LimitHit = 'client' | 'org' | 'source';

export interface FrontDoorOptions<S extends WebhookSourceLimits> {
  gate: WebhookGate<S>;
  limiter: IngressLimiter;
  handle(webhook: InboundWebhook<S>, request: FastifyRequest): Promise<WebhookAnswer>;
  /** Told of each refusal made at the door (metrics). */
  onRefused?(refusal: DoorRefusal, limit?: LimitHit): void;
}

/** Sends a refusal row. `close`: the body was never read, so the client must not keep uploading into the socket. */
export function sendRefusal(reply: FastifyReply, refusal: WebhookRefusal, message?: string, retryAfterSeconds?: number, close = false): FastifyReply {
  const row = WEBHOOK_REFUSALS[refusal];
  if ('retryAfter' in row) {
    const seconds = row.retryAfter === 'given' ? (retryAfterSeconds ?? FALLBACK_RETRY_AFTER_SECONDS) : row.retryAfter;
    void reply.header('retry-after', String(seconds));
  }
  if (close) void reply.header('connection', 'close');
  return reply.code(row.status).send({ error: { code: row.code, message: message ?? row.message } });
}

export function sendAnswer(reply: FastifyReply, answer: WebhookAnswer): FastifyReply {
  if ('refusal' in answer) return sendRefusal(reply, answer.refusal, answer.message, answer.retryAfterSeconds);
  return reply.code(200).send(answer.body);
}

function isBodyTooLarge(error: FastifyError): boolean {
  return error.code === 'FST_ERR_CTP_BODY_TOO_LARGE';
}

/** The front door as a fastify plugin; register it on the role's HTTP server. */
export function webhookFrontDoor<S extends WebhookSourceLimits>(options: FrontDoorOptions<S>): (scope: FastifyInstance) => Promise<void> {
  const { gate, limiter, onRefused } = options;
  const admitted = new WeakMap<IncomingMessage, InboundWebhook<S>>();

  function refuse(reply: FastifyReply, refusal: DoorRefusal, message: string, retryAfterSeconds?: number, limit?: LimitHit): void {
    onRefused?.(refusal, limit);
    void sendRefusal(reply, refusal, message, retryAfterSeconds, true);
  }

  async function admit(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const arrival = Date.now();
    const params = request.params as WebhookParams;
    const orgId = params.orgId;
    const declared = declaredLength(request.headers);
    if (declared > MAX_WEBHOOK_BYTES) return refuse(reply, 'bodyTooLarge', `webhook body of ${declared} bytes is larger than the limit of ${MAX_WEBHOOK_BYTES} bytes`);
    let wait = limiter.byClient(request.ip, arrival);
    if (wait > 0) return refuse(reply, 'rateLimited', 'too many webhooks from this client address; retry later', wait, 'client');
    const knownOrg = isValidOrgId(orgId) ? gate.hasOrg(orgId) : false;
    if (!(typeof knownOrg === 'boolean' ? knownOrg : await knownOrg)) return refuse(reply, 'unknownOrg', `org "${orgId}" has no registered source here`);
    wait = limiter.byOrg(orgId, arrival);
    if (wait > 0) return refuse(reply, 'rateLimited', `too many webhooks for org "${orgId}"; retry later`, wait, 'org');

    const generic = params.sourceId !== undefined;
    const providerKind = generic ? 'generic' : (params.providerKind ?? '');
    const routingKey = routingKeyOf(providerKind, params.sourceId, request.headers);
    const found = isValidSourcePath(params) ? gate.source(orgId, routingKey, providerKind) : undefined;
    const source = found instanceof Promise ? await found : found;
    if (source === undefined) return refuse(reply, 'unknownSource', `no source is registered for routing key "${routingKey}" in org "${orgId}"`);
    if (source.rateLimitRpm !== undefined) {
      wait = limiter.bySource(orgId, source.routingKey, source.rateLimitRpm, arrival);
      if (wait > 0) return refuse(reply, 'rateLimited', `too many webhooks for source "${routingKey}"; retry later`, wait, 'source');
    }
    if (source.maxPayloadBytes !== undefined && declared > source.maxPayloadBytes) {
      return refuse(reply, 'bodyTooLarge', `webhook body of ${declared} bytes is larger than this source's limit of ${source.maxPayloadBytes} bytes`);
    }
    admitted.set(request.raw, { arrival, orgId, providerKind, sourceId: params.sourceId, routingKey, source, body: EMPTY, deliveryId: '', deliveryIdFromProvider: false });
  }

  async function receive(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const webhook = admitted.get(request.raw);
    if (webhook === undefined) throw new Error('webhook handler reached without admission');
    const body = Buffer.isBuffer(request.body) ? request.body : EMPTY;
    const max = webhook.source.maxPayloadBytes;
    // Without a (truthful) Content-Length the source's own limit can only be checked now.
    if (max !== undefined && body.length > max) {
      onRefused?.('bodyTooLarge');
      return sendRefusal(reply, 'bodyTooLarge', `webhook body of ${body.length} bytes is larger than this source's limit of ${max} bytes`);
    }
    const id = deliveryIdOf(request.headers as IncomingHttpHeaders, webhook.sourceId !== undefined, webhook.providerKind);
    webhook.body = body;
    webhook.deliveryId = id.deliveryId;
    webhook.deliveryIdFromProvider = id.fromProvider;
    return sendAnswer(reply, await options.handle(webhook, request));
  }

  return async function frontDoor(scope: FastifyInstance): Promise<void> {
    // Raw bytes for every content type: the orchestrator verifies signatures over them.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_WEBHOOK_BYTES }, (_request, body, done) => done(null, body));
    // A body that outgrows the limit while streaming (no or a false Content-Length) ends here;
    // anything else goes on to the server's one error mapping.
    scope.setErrorHandler((error: FastifyError, _request, reply) => {
      if (!isBodyTooLarge(error)) throw error;
      onRefused?.('bodyTooLarge');
      return sendRefusal(reply, 'bodyTooLarge', `webhook body is larger than the limit of ${MAX_WEBHOOK_BYTES} bytes`);
    });
    const route = { bodyLimit: MAX_WEBHOOK_BYTES, onRequest: admit };
    scope.post('/webhook/:orgId/:providerKind', route, receive);
    scope.post('/webhook/:orgId/generic/:sourceId', route, receive);
  };
}
