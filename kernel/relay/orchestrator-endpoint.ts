// `GET /v1/orchestrators/connect`: orchestrators dial in with their org's platform token. The
// token is checked before the WebSocket handshake (401 otherwise); the first frame must be
// `orchestrator.hello` at protocol version >= MIN_PROTOCOL_VERSION (else close 1002). Every
// frame is validated against the wire contract; a bad frame is refused and logged, and a socket
// that keeps sending them is closed — a frame never crashes the relay.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import {
  MIN_PROTOCOL_VERSION,
  OrchestratorToRelayMembers,
  PROTOCOL_VERSION,
  WS_CLOSE_PROTOCOL_ERROR,
  type ExecutionStatus,
  type JobStatusForward,
  type OrchestratorToRelay,
} from '../../schemas/wire/relay.ts';
import { compileMessageUnion, formatIssues } from '../../schemas/validate.ts';
import type { DatabasePool } from '../services/db/index.ts';
import { messageOf } from '../../core/errors.ts';
import type { BufferStore } from './buffer-store.ts';
import { OrchestratorConnection, type OrchestratorPool } from './orchestrator-pool.ts';
import { orgForToken } from './orgs.ts';
import type { RelayMetrics } from './relay-metrics.ts';
import type { NegativeCache, RoutingTable } from './routing-table.ts';
import { recordStatusBatch, type StatusBatch } from './run-index.ts';
import { trackSocket } from '../services/ws-metrics.ts';
import type { SvcMetrics } from '../services/metrics.ts';

export const CONNECT_PATH = '/v1/orchestrators/connect';
/** Frames from an orchestrator are small (acks, registrations); a hello with many sources fits. */
export const MAX_ORCHESTRATOR_FRAME_BYTES = 4 * 1024 * 1024;
const WS_CLOSE_GOING_AWAY = 1001;
const WS_CLOSE_INTERNAL = 1011;

const checkFrame = compileMessageUnion(OrchestratorToRelayMembers);

export interface OrchestratorEndpointOptions {
  db: DatabasePool;
  pool: OrchestratorPool;
  routing: RoutingTable;
  negativeCache: NegativeCache;
  buffer: BufferStore;
  metrics: RelayMetrics;
  /** The process registry: counts accepted sockets (`svc_ws_*{endpoint="relay_orchestrator"}`). */
  socketMetrics?: SvcMetrics;
  logger: Logger;
  heartbeatMs: number;
  helloTimeoutMs: number;
  /** Refused frames tolerated per socket before it is closed with 1002. */
  maxInvalidFrames: number;
  /** An orchestrator finished hello: replay the org's buffer. */
  onReady(connection: OrchestratorConnection): void;
  /** Responses to dashboard requests (`*.response`, kernel/relay/dashboard). */
  onResponse?(connection: OrchestratorConnection, message: Extract<OrchestratorToRelay, { requestId: string }>): void;
}

interface SocketState {
  socket: WebSocket;
  orgId: string;
  alive: boolean;
  invalid: number;
  connection?: OrchestratorConnection;
  helloDone: boolean;
  /** Frames that touch the database are applied in order. */
  queue: Promise<void>;
  /** Status messages not yet written: the next write on the queue takes them all at once. */
  statuses: StatusBatch;
  statusWriteQueued: boolean;
}

function rejectUpgrade(socket: Duplex, status: number, reason: string, code: string, message: string): void {
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function bearerOf(request: IncomingMessage): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export class OrchestratorEndpoint {
  readonly #options: OrchestratorEndpointOptions;
  readonly #wss = new WebSocketServer({ noServer: true, maxPayload: MAX_ORCHESTRATOR_FRAME_BYTES, perMessageDeflate: false });
  readonly #sockets = new Set<SocketState>();
  #heartbeat: NodeJS.Timeout | undefined;
  #stopping = false;

  constructor(options: OrchestratorEndpointOptions) {
    this.#options = options;
    this.#heartbeat = setInterval(() => this.#beat(), options.heartbeatMs);
    this.#heartbeat.unref();
  }

  /** The HTTP server's `upgrade` listener. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => undefined);
    const path = (request.url ?? '').split('?')[0];
    if (path !== CONNECT_PATH) {
      rejectUpgrade(socket, 404, 'Not Found', 'SVC_ERR_HTTP_NOT_FOUND', `no WebSocket endpoint at ${path}`);
      return;
    }
    if (this.#stopping) {
      rejectUpgrade(socket, 503, 'Service Unavailable', 'SVC_ERR_RELAY_STOPPING', 'the relay is stopping; reconnect shortly');
      return;
    }
    const token = bearerOf(request);
    if (token === undefined) {
      rejectUpgrade(socket, 401, 'Unauthorized', 'SVC_ERR_RELAY_TOKEN_MISSING', 'send the org platform token as "Authorization: Bearer <token>"');
      return;
    }
    orgForToken(this.#options.db, token).then(
      (orgId) => {
        if (orgId === undefined) {
          this.#options.logger.warn({ remoteAddress: request.socket.remoteAddress }, 'orchestrator connect refused: unknown platform token');
          rejectUpgrade(socket, 401, 'Unauthorized', 'SVC_ERR_RELAY_TOKEN_INVALID', 'the platform token is not valid for any org (rotated or mistyped?)');
          return;
        }
        if (this.#stopping || socket.destroyed) {
          socket.destroy();
          return;
        }
        this.#wss.handleUpgrade(request, socket, head, (ws) => this.#accept(ws, orgId));
      },
      (error: unknown) => {
        this.#options.logger.error({ err: error }, 'orchestrator connect: token lookup failed');
        rejectUpgrade(socket, 503, 'Service Unavailable', 'SVC_ERR_RELAY_UNAVAILABLE', 'the relay cannot check tokens right now; retry shortly');
      },
    );
  }

  #accept(socket: WebSocket, orgId: string): void {
    const state: SocketState = { socket, orgId, alive: true, invalid: 0, helloDone: false, queue: Promise.resolve(), statuses: { runs: [], jobs: [] }, statusWriteQueued: false };
    this.#sockets.add(state);
    if (this.#options.socketMetrics !== undefined) trackSocket(this.#options.socketMetrics, 'relay_orchestrator', socket);
    const log = this.#options.logger.child({ orgId });
    const helloTimer = setTimeout(() => {
      if (!state.helloDone) this.#protocolError(state, `no orchestrator.hello within ${this.#options.helloTimeoutMs} ms`);
    }, this.#options.helloTimeoutMs);
    socket.on('pong', () => {
      state.alive = true;
      state.connection?.touch();
    });
    socket.on('error', (error) => log.warn({ err: error }, 'orchestrator socket error'));
    socket.on('close', (code, reason) => {
      clearTimeout(helloTimer);
      this.#sockets.delete(state);
      if (state.connection) {
        state.connection.markClosed();
        this.#options.pool.remove(state.connection);
        log.info({ orchestratorId: state.connection.orchestratorId, code, reason: reason.toString() }, 'orchestrator disconnected');
      }
    });
    socket.on('message', (data, isBinary) => this.#onFrame(state, data, isBinary, log));
  }

  #refuse(state: SocketState, reason: string, detail: string, log: Logger): void {
    state.invalid += 1;
    this.#options.metrics.framesRefused.inc({ reason });
    log.warn({ reason, detail, refused: state.invalid }, 'orchestrator frame refused');
    if (state.invalid > this.#options.maxInvalidFrames) this.#protocolError(state, `too many refused frames (${state.invalid})`);
  }

  #protocolError(state: SocketState, why: string): void {
    this.#options.logger.warn({ orgId: state.orgId, why }, 'closing orchestrator socket: protocol error');
    // Close reasons are limited to 123 bytes.
    state.socket.close(WS_CLOSE_PROTOCOL_ERROR, why.slice(0, 120));
  }

  #onFrame(state: SocketState, data: RawData, isBinary: boolean, log: Logger): void {
    let parsed: unknown;
    try {
      if (isBinary) throw new Error('binary frames are not part of the protocol');
      parsed = JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8'));
    } catch (error) {
      if (!state.helloDone) return this.#protocolError(state, `first frame is not JSON: ${messageOf(error)}`);
      return this.#refuse(state, 'json', messageOf(error), log);
    }
    state.connection?.touch();
    const checked = checkFrame.validate(parsed);
    if (!checked.ok) {
      if (!state.helloDone) return this.#protocolError(state, `invalid first frame: ${formatIssues(checked.issues)}`);
      return this.#refuse(state, 'schema', formatIssues(checked.issues), log);
    }
    const message = checked.value as OrchestratorToRelay;
    if (!state.helloDone) {
      if (message.type !== 'orchestrator.hello') return this.#protocolError(state, `first frame must be orchestrator.hello, got ${message.type}`);
      if (message.protocolVersion < MIN_PROTOCOL_VERSION) {
        return this.#protocolError(state, `protocol version ${message.protocolVersion} is below the minimum ${MIN_PROTOCOL_VERSION}; upgrade the orchestrator`);
      }
      state.helloDone = true;
      state.queue = state.queue.then(() => this.#hello(state, message, log));
      return;
    }
    if (message.type === 'webhook.ack') {
      // Acks bypass the queue: a delivery waits on them.
      if (!state.connection?.handleAck(message)) log.debug({ deliveryRef: message.deliveryRef }, 'ack for no waiting delivery (late or replayed)');
      return;
    }
    if ('requestId' in message) {
      // Responses bypass the queue too: an HTTP request waits on them.
      if (state.connection) this.#options.onResponse?.(state.connection, message);
      return;
    }
    if (message.type === 'execution.status' || message.type === 'job.status.forward') return this.#takeStatus(state, message, log);
    state.queue = state.queue.then(() =>
      this.#apply(state, message, log).catch((error: unknown) => log.error({ err: error, type: message.type }, 'orchestrator frame could not be applied')),
    );
  }

  async #hello(state: SocketState, hello: Extract<OrchestratorToRelay, { type: 'orchestrator.hello' }>, log: Logger): Promise<void> {
    const { orgId, socket } = state;
    try {
      await this.#options.routing.register(orgId, hello.sources, hello.orchestratorId);
    } catch (error) {
      log.error({ err: error }, 'orchestrator hello: sources could not be stored');
      socket.close(WS_CLOSE_INTERNAL, 'relay could not store sources; reconnect');
      return;
    }
    if (socket.readyState !== socket.OPEN) return;
    this.#options.negativeCache.forgetOrg(orgId);
    const connection = new OrchestratorConnection(socket, orgId, hello.orchestratorId, hello.version ?? null, hello.protocolVersion);
    state.connection = connection;
    this.#options.pool.add(connection);
    connection.send({ type: 'relay.welcome', protocolVersion: PROTOCOL_VERSION, orgId, buffered: this.#options.buffer.count(orgId) });
    log.info({ orchestratorId: hello.orchestratorId, protocolVersion: hello.protocolVersion, sources: hello.sources.length }, 'orchestrator connected');
    this.#options.onReady(connection);
  }

  /**
   * Status messages are written in batches: those that arrive before their batch's turn on the
   * queue go together (one transaction, run-index.ts). A later status may so be written ahead
   * of a source frame that arrived before it: they touch different tables, and statuses carry
   * their own order (`updatedAt`).
   */
  #takeStatus(state: SocketState, message: ExecutionStatus | JobStatusForward, log: Logger): void {
    // The connection's token decides the org; a message naming another one is a bug upstream.
    if (message.orgId !== undefined && message.orgId !== state.orgId) {
      return this.#refuse(state, 'org', `${message.type} of run ${message.runId} names org ${message.orgId}, but this connection serves ${state.orgId}`, log);
    }
    if (message.type === 'execution.status') state.statuses.runs.push(message);
    else state.statuses.jobs.push(message);
    if (state.statusWriteQueued) return;
    state.statusWriteQueued = true;
    state.queue = state.queue.then(async () => {
      const batch = state.statuses;
      state.statuses = { runs: [], jobs: [] };
      state.statusWriteQueued = false;
      try {
        await recordStatusBatch(this.#options.db, state.orgId, batch);
      } catch (error) {
        log.error({ err: error, runs: batch.runs.length, jobs: batch.jobs.length }, 'orchestrator status messages could not be written to the run index');
      }
    });
  }

  async #apply(state: SocketState, message: OrchestratorToRelay, log: Logger): Promise<void> {
    const { orgId } = state;
    switch (message.type) {
      case 'orchestrator.hello':
        return this.#refuse(state, 'order', 'a second orchestrator.hello on one socket', log);
      case 'source.register':
        await this.#options.routing.register(orgId, [message.source], state.connection?.orchestratorId ?? 'unknown');
        this.#options.negativeCache.forgetOrg(orgId);
        return;
      case 'source.deregister':
        await this.#options.routing.deregister(orgId, message.routingKey);
        return;
      case 'source.secrets':
        if (!(await this.#options.routing.setSignatureMeta(orgId, message.routingKey, message.signatureMode, message.rotating))) {
          log.info({ routingKey: message.routingKey }, 'source.secrets for a routing key that is not registered');
        }
        return;
      default:
        // Responses to dashboard requests: the relay does not issue those yet.
        log.debug({ type: message.type }, 'orchestrator message with no waiting request');
        return;
    }
  }

  #beat(): void {
    for (const state of this.#sockets) {
      if (!state.alive) {
        this.#options.logger.warn({ orgId: state.orgId }, 'orchestrator socket missed a heartbeat; dropping it');
        state.connection?.markClosed();
        state.socket.terminate();
        continue;
      }
      state.alive = false;
      state.socket.ping();
    }
  }

  /** Closes every orchestrator socket; waiting deliveries fall through to the buffer. */
  async close(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#heartbeat);
    const closing = [...this.#sockets].map(
      (state) =>
        new Promise<void>((resolve) => {
          state.connection?.markClosed();
          if (state.socket.readyState === state.socket.CLOSED) return resolve();
          state.socket.once('close', () => resolve());
          state.socket.close(WS_CLOSE_GOING_AWAY, 'relay stopping');
          setTimeout(() => {
            state.socket.terminate();
            resolve();
          }, 2_000).unref();
        }),
    );
    await Promise.all(closing);
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}
