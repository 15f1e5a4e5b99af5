// The orchestrator's link to the Platform relay: dials `{platform_url}/v1/orchestrators/connect`
// with the org's platform token, says hello with its sources, answers every `webhook.deliver`
// with exactly one `webhook.ack`, and redials with capped exponential backoff and jitter. A
// failure inside `onDelivery` never drops a delivery silently: transient failures are answered
// `shed_retry_later` (the relay keeps a replayed delivery; a live one is refused with 429), and
// only errors that say the input or setup is wrong become `rejected_misconfigured`.
import type { Logger } from 'pino';
import WebSocket from 'ws';
import {
  ACK_RESULTS,
  PROTOCOL_VERSION,
  RelayToOrchestratorMembers,
  WS_CLOSE_PROTOCOL_ERROR,
  WebhookAck,
  type AckResult,
  type OrchestratorToRelay,
  type RelaySource,
  type RelayToOrchestrator,
  type WebhookDeliver,
} from '../../../schemas/wire/relay.ts';
import { compileMessageUnion, compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { UnavailableError, isSvcError, messageOf } from '../../../core/errors.ts';
import { trackSocket } from '../../services/ws-metrics.ts';
import { tickWrites, type TickWrites } from '../../services/ws-tick-writes.ts';
import { packageVersion } from '../../../core/package-info.ts';
import type { SvcMetrics } from '../../services/metrics.ts';

export const CONNECT_PATH = '/v1/orchestrators/connect';
/** A 25 MiB body is ~33.4 MiB in base64, plus headers and framing. */
export const MAX_RELAY_FRAME_BYTES = 40 * 1024 * 1024;

const checkFrame = compileMessageUnion(RelayToOrchestratorMembers);
const checkAck = compileSchema(WebhookAck);

export interface RelayDeliveryResult {
  result: AckResult;
  retryAfterSeconds?: number;
  message?: string;
}

export interface ConnectRelayOptions {
  /** `{platform_url}` (http/https; ws/wss also accepted). */
  platformUrl: string;
  platformToken: string;
  orchestratorId: string;
  /** The sources to announce in every hello (called on each (re)connect). */
  sources: () => RelaySource[];
  /** Verifies, dedups and admits one delivery; resolves with the ack to send. */
  onDelivery: (delivery: WebhookDeliver) => Promise<RelayDeliveryResult>;
  logger: Logger;
  /** Other relay messages (dashboard requests: run.rerun.request, …). */
  onMessage?: (message: RelayToOrchestrator) => void;
  /** At every `relay.welcome` (first connect and each reconnect), once the link counts as connected. */
  onWelcome?: (welcome: { orgId: string }) => void;
  /** When a connected link drops (messages sent shortly before may be lost). */
  onDisconnected?: () => void;
  minReconnectDelayMs?: number;
  maxReconnectDelayMs?: number;
  /** No ping from the relay for this long: the socket is considered dead and redialled. */
  heartbeatTimeoutMs?: number;
  /** Test hook: announce another protocol version. */
  protocolVersion?: number;
  /** Counts the link's socket (`svc_ws_*{endpoint="relay_link"}`). */
  metrics?: SvcMetrics;
}

export interface RelayLink {
  /** True between `relay.welcome` and the socket closing. */
  readonly connected: boolean;
  /** The org the relay serves this link for (its platform token's), from the last welcome. */
  readonly orgId: string | undefined;
  /**
   * Deliveries offered while one with the same delivery id was still being handled (a replay
   * racing its live attempt): they shared its outcome, `onDelivery` ran once. Tests wait on it.
   */
  readonly joinedDeliveries: number;
  /** A redial is scheduled (its timer pending). False once closed: nothing dials again. */
  readonly redialScheduled: boolean;
  /** Sockets dialled so far (the first and each redial): a dial starts only once the last ended. */
  readonly dials: number;
  registerSource(source: RelaySource): void;
  deregisterSource(routingKey: string): void;
  /** Sends a message now if connected (status forwards); false when not connected. */
  send(message: OrchestratorToRelay): boolean;
  /** Resolves at the next (or current) welcome; rejects after `timeoutMs` or on close. */
  waitConnected(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** SvcError kinds that mean "this delivery or its source is wrong", not "try again". */
const DEFINITIVE_KINDS = new Set(['input', 'not_found', 'authentication', 'not_allowed', 'conflict']);

export function ackForError(error: unknown): RelayDeliveryResult {
  const message = messageOf(error).slice(0, 1000);
  if (isSvcError(error) && DEFINITIVE_KINDS.has(error.kind)) return { result: 'rejected_misconfigured', message };
  return { result: 'shed_retry_later', retryAfterSeconds: 5, message };
}

function connectUrl(platformUrl: string): string {
  const url = new URL(platformUrl);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  url.pathname = url.pathname.replace(/\/+$/, '') + CONNECT_PATH;
  url.search = '';
  url.hash = '';
  return url.toString();
}

/** What `onDelivery` returned, made into a valid ack (bad values become a logged shed). */
function toAck(deliveryRef: string, outcome: RelayDeliveryResult): WebhookAck {
  const ack: WebhookAck = { type: 'webhook.ack', deliveryRef, result: outcome.result };
  if (outcome.retryAfterSeconds !== undefined) ack.retryAfterSeconds = Math.min(3600, Math.max(1, Math.ceil(outcome.retryAfterSeconds)));
  if (outcome.message !== undefined) ack.message = String(outcome.message).slice(0, 1000);
  if (!(ACK_RESULTS as readonly string[]).includes(ack.result) || !checkAck.check(ack)) {
    return { type: 'webhook.ack', deliveryRef, result: 'shed_retry_later', retryAfterSeconds: 5, message: 'orchestrator produced an invalid ack' };
  }
  return ack;
}

export function connectRelay(options: ConnectRelayOptions): RelayLink {
  const log = options.logger.child({ component: 'relay-link' });
  const url = connectUrl(options.platformUrl);
  const minDelay = options.minReconnectDelayMs ?? 500;
  const maxDelay = options.maxReconnectDelayMs ?? 30_000;
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 45_000;

  const registered = new Map<string, RelaySource>();
  const deregistered = new Set<string>();
  const inFlight = new Map<string, Promise<RelayDeliveryResult>>();
  let waiters: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];

  let socket: WebSocket | undefined;
  let connected = false;
  let orgId: string | undefined;
  let closed = false;
  let attempt = 0;
  let joinedDeliveries = 0;
  let dials = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;
  let heartbeatTimer: NodeJS.Timeout | undefined;
  let lastFailure: 'auth' | 'protocol' | undefined;
  // The orchestrator's hops of a relayed delivery (one clock: this process's), so a slow ingest
  // names its hop: frame in → record committed (onDelivery resolves after the commit) → ack out.
  const stageSeconds = options.metrics?.histogram({
    name: 'svc_orch_relay_delivery_seconds',
    help: 'Hops of a relayed webhook in the orchestrator: receive_to_commit (frame received to its record committed), commit_to_ack (to the ack frame written).',
    labelNames: ['stage'],
    buckets: [0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.035, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5],
  });

  // The status forwarder sends a pass's messages (two per run, dozens a pass under webhook load)
  // in a loop: one write per tick instead of one per frame (ws-tick-writes.ts). At 200 webhooks/s
  // they were two of every three frames, and sending frames took a tenth of this process's CPU.
  const writers = new WeakMap<WebSocket, TickWrites>();
  const sendOn = (ws: WebSocket, message: OrchestratorToRelay): boolean => {
    if (ws.readyState !== WebSocket.OPEN) return false;
    const writer = writers.get(ws);
    if (writer === undefined) ws.send(JSON.stringify(message));
    else writer.send(JSON.stringify(message));
    return true;
  };

  const armHeartbeat = (ws: WebSocket): void => {
    clearTimeout(heartbeatTimer);
    heartbeatTimer = setTimeout(() => {
      log.warn({ heartbeatTimeoutMs }, 'no heartbeat from the relay; redialling');
      ws.terminate();
    }, heartbeatTimeoutMs);
    heartbeatTimer.unref();
  };

  const scheduleReconnect = (): void => {
    if (closed) return;
    // Refusals that a retry will not fix wait the longest delay; others back off from the minimum.
    const exp = lastFailure !== undefined ? maxDelay : Math.min(maxDelay, minDelay * 2 ** Math.min(attempt, 20));
    const delay = exp / 2 + Math.random() * (exp / 2);
    attempt += 1;
    reconnectTimer = setTimeout(dial, delay);
    reconnectTimer.unref();
  };

  function helloSources(): RelaySource[] {
    const merged = new Map<string, RelaySource>();
    let given: RelaySource[] = [];
    try {
      given = options.sources();
    } catch (error) {
      log.error({ err: error }, 'sources() failed; announcing only sources registered through the link');
    }
    for (const s of given) merged.set(s.routingKey, s);
    for (const [key, s] of registered) merged.set(key, s);
    for (const key of deregistered) merged.delete(key);
    return [...merged.values()];
  }

  async function handleDelivery(ws: WebSocket, delivery: WebhookDeliver, arrived: number): Promise<void> {
    let pending = inFlight.get(delivery.deliveryId);
    if (pending !== undefined) {
      joinedDeliveries += 1;
    } else {
      pending = (async () => {
        try {
          return await options.onDelivery(delivery);
        } catch (error) {
          log.warn({ err: error, deliveryId: delivery.deliveryId }, 'delivery handler failed');
          return ackForError(error);
        }
      })();
      inFlight.set(delivery.deliveryId, pending);
      const settled = pending;
      void settled.finally(() => {
        if (inFlight.get(delivery.deliveryId) === settled) inFlight.delete(delivery.deliveryId);
      });
    }
    const outcome = await pending;
    const committed = performance.now();
    // The socket that carried the delivery: if it is gone the relay has already moved on.
    if (!sendOn(ws, toAck(delivery.deliveryRef, outcome))) {
      log.info({ deliveryId: delivery.deliveryId }, 'relay socket closed before the ack could be sent; the relay will redeliver');
    } else if (stageSeconds !== undefined) {
      stageSeconds.observe({ stage: 'receive_to_commit' }, (committed - arrived) / 1000);
      stageSeconds.observe({ stage: 'commit_to_ack' }, (performance.now() - committed) / 1000);
    }
  }

  function onFrame(ws: WebSocket, data: WebSocket.RawData, isBinary: boolean): void {
    const arrived = performance.now();
    let parsed: unknown;
    try {
      if (isBinary) throw new Error('binary frame');
      parsed = JSON.parse(data.toString());
    } catch (error) {
      log.warn({ err: error }, 'relay frame is not JSON; ignored');
      return;
    }
    const checked = checkFrame.validate(parsed);
    if (!checked.ok) {
      log.warn({ issues: formatIssues(checked.issues) }, 'relay frame refused');
      return;
    }
    const message = checked.value as RelayToOrchestrator;
    switch (message.type) {
      case 'relay.welcome': {
        connected = true;
        attempt = 0;
        lastFailure = undefined;
        log.info({ orgId: message.orgId, buffered: message.buffered }, 'connected to the relay');
        for (const key of deregistered) sendOn(ws, { type: 'source.deregister', routingKey: key });
        deregistered.clear();
        const ready = waiters;
        waiters = [];
        for (const w of ready) w.resolve();
        orgId = message.orgId;
        try {
          options.onWelcome?.({ orgId: message.orgId });
        } catch (error) {
          log.error({ err: error }, 'welcome handler failed');
        }
        return;
      }
      case 'webhook.deliver':
        void handleDelivery(ws, message, arrived);
        return;
      default:
        options.onMessage?.(message);
    }
  }

  function dial(): void {
    reconnectTimer = undefined;
    if (closed) return;
    dials += 1;
    const ws = new WebSocket(url, {
      headers: { authorization: `Bearer ${options.platformToken}` },
      maxPayload: MAX_RELAY_FRAME_BYTES,
      perMessageDeflate: false,
      handshakeTimeout: 10_000,
    });
    socket = ws;
    writers.set(ws, tickWrites(ws));
    if (options.metrics !== undefined) trackSocket(options.metrics, 'relay_link', ws);
    ws.on('open', () => {
      armHeartbeat(ws);
      sendOn(ws, {
        type: 'orchestrator.hello',
        protocolVersion: options.protocolVersion ?? PROTOCOL_VERSION,
        orchestratorId: options.orchestratorId,
        sources: helloSources(),
        version: packageVersion(),
      });
    });
    ws.on('ping', () => armHeartbeat(ws));
    ws.on('message', (data, isBinary) => onFrame(ws, data, isBinary));
    ws.on('error', (error) => {
      const status = /Unexpected server response: (\d+)/.exec(error.message)?.[1];
      if (status === '401') {
        lastFailure = 'auth';
        log.error({ url }, 'the relay refused the platform token (401); check SVC_PLATFORM_TOKEN');
      } else {
        log.warn({ err: error, url }, 'relay connection error');
      }
    });
    ws.on('close', (code, reason) => {
      if (socket === ws) socket = undefined;
      clearTimeout(heartbeatTimer);
      const wasConnected = connected;
      connected = false;
      if (code === WS_CLOSE_PROTOCOL_ERROR) {
        lastFailure = 'protocol';
        log.error({ code, reason: reason.toString() }, 'the relay closed the link: protocol error');
      } else if (wasConnected) {
        log.warn({ code, reason: reason.toString() }, 'relay link closed; redialling');
      }
      if (wasConnected) {
        try {
          options.onDisconnected?.();
        } catch (error) {
          log.error({ err: error }, 'disconnect handler failed');
        }
      }
      scheduleReconnect();
    });
  }

  dial();

  return {
    get connected() {
      return connected;
    },
    get orgId() {
      return orgId;
    },
    get joinedDeliveries() {
      return joinedDeliveries;
    },
    get redialScheduled() {
      return reconnectTimer !== undefined;
    },
    get dials() {
      return dials;
    },
    registerSource(source) {
      registered.set(source.routingKey, source);
      deregistered.delete(source.routingKey);
      if (connected && socket) sendOn(socket, { type: 'source.register', source });
    },
    deregisterSource(routingKey) {
      registered.delete(routingKey);
      if (connected && socket && sendOn(socket, { type: 'source.deregister', routingKey })) return;
      deregistered.add(routingKey);
    },
    send(message) {
      return connected && socket !== undefined && sendOn(socket, message);
    },
    waitConnected(timeoutMs = 10_000) {
      if (connected) return Promise.resolve();
      if (closed) return Promise.reject(new UnavailableError('SVC_ERR_RELAY_LINK_CLOSED', 'the relay link is closed'));
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== waiter);
          reject(new UnavailableError('SVC_ERR_RELAY_LINK_TIMEOUT', `not connected to the relay at ${options.platformUrl} within ${timeoutMs} ms`));
        }, timeoutMs);
        const waiter = {
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
          reject: (e: Error) => {
            clearTimeout(timer);
            reject(e);
          },
        };
        waiters.push(waiter);
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(reconnectTimer);
      reconnectTimer = undefined;
      clearTimeout(heartbeatTimer);
      for (const w of waiters) w.reject(new UnavailableError('SVC_ERR_RELAY_LINK_CLOSED', 'the relay link was closed'));
      waiters = [];
      const ws = socket;
      if (ws === undefined || ws.readyState === WebSocket.CLOSED) return;
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          ws.terminate();
          resolve();
        }, 2_000);
        ws.once('close', () => {
          clearTimeout(force);
          resolve();
        });
        if (ws.readyState === WebSocket.CONNECTING) ws.terminate();
        else ws.close(1000, 'orchestrator stopping');
      });
    },
  };
}
