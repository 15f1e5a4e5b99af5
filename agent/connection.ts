// The agent's WebSocket to the orchestrator (`GET /v1/agents/connect`, schemas/wire/agent.ts):
// authenticate with the bearer token, register, keep the link alive, reconnect with capped
// exponential backoff and jitter, and queue outbound messages while disconnected so job
// statuses and logs reach the orchestrator after a reconnect inside the recovery window.
//
// Fatal closes end the agent instead of retrying: a bad or revoked token (4001, 4003, or HTTP
// 401/403 on the upgrade) and a protocol error (1002, e.g. a protocol version below the floor).
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { AuthenticationError, SvcError, messageOf } from '../core/errors.ts';
import { OrchestratorToAgentMembers, type AgentRegister, type AgentToOrchestrator, type OrchestratorToAgent } from '../schemas/wire/agent.ts';
import { WS_CLOSE_PROTOCOL_ERROR, WS_CLOSE_REFUSED, WS_CLOSE_UNAUTHORIZED } from '../schemas/wire/relay.ts';
import { compileMessageUnion, formatIssues } from '../schemas/validate.ts';
import { backoffDelay } from './backoff.ts';
import { forPeerProtocol } from './peer-protocol.ts';

const checkIncoming = compileMessageUnion(OrchestratorToAgentMembers);

export const REGISTER_TIMEOUT_MS = 30_000;
export const HEARTBEAT_MS = 30_000;
/** Messages kept while disconnected; beyond it the oldest log chunks are dropped first. */
export const MAX_QUEUED = 20_000;

export interface ConnectionOptions {
  connectUrl: string;
  token: string | undefined;
  logger: Logger;
  maxReconnectDelayMs: number;
  baseReconnectDelayMs?: number;
  random?: () => number;
  /** Built afresh for every (re)connection: it carries the in-flight jobs. */
  register(): AgentRegister;
  onMessage(message: OrchestratorToAgent): void;
}

export interface ConnectionEnd {
  /** Set when the orchestrator refused the agent for good. */
  fatal?: SvcError;
}

export class AgentConnection {
  readonly #options: ConnectionOptions;
  readonly #logger: Logger;
  #ws: WebSocket | undefined;
  #registered = false;
  /** The protocol the orchestrator answered `agent.registered` with: what it accepts from us. */
  #peerProtocol = 0;
  #stopping = false;
  #attempt = 0;
  #queue: AgentToOrchestrator[] = [];
  #reconnectTimer: NodeJS.Timeout | undefined;
  #firstRegistration: { resolve: () => void; reject: (e: Error) => void } | undefined;
  #endResolve!: (end: ConnectionEnd) => void;
  /** Resolves when the connection gives up for good (stop or fatal close). */
  readonly ended: Promise<ConnectionEnd>;
  /** Counters for operators and tests. */
  readonly stats = { connects: 0, registrations: 0, closes: [] as number[], delays: [] as number[] };

  constructor(options: ConnectionOptions) {
    this.#options = options;
    this.#logger = options.logger;
    this.ended = new Promise((resolve) => (this.#endResolve = resolve));
  }

  get registered(): boolean {
    return this.#registered;
  }

  /** Connect and register; resolves on the first `agent.registered`, rejects on a fatal refusal. */
  start(): Promise<void> {
    const first = new Promise<void>((resolve, reject) => (this.#firstRegistration = { resolve, reject }));
    this.#connect();
    return first;
  }

  /** Send now, or queue until the next registration. */
  send(message: AgentToOrchestrator): void {
    if (this.#registered && this.#ws?.readyState === WebSocket.OPEN) {
      this.#ws.send(JSON.stringify(forPeerProtocol(message, this.#peerProtocol)));
      return;
    }
    if (this.#stopping) return;
    this.#queue.push(message);
    if (this.#queue.length > MAX_QUEUED) {
      const index = this.#queue.findIndex((m) => m.type === 'log.chunk');
      this.#queue.splice(index === -1 ? 0 : index, 1);
      this.#logger.warn('outbound queue full while disconnected: dropped the oldest message');
    }
  }

  /** Resolves once queued messages were handed to the socket (best effort). */
  async flush(timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((this.#queue.length > 0 || (this.#ws?.bufferedAmount ?? 0) > 0) && Date.now() < deadline && this.#ws?.readyState === WebSocket.OPEN) {
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async stop(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    if (this.#reconnectTimer !== undefined) clearTimeout(this.#reconnectTimer);
    const ws = this.#ws;
    if (ws !== undefined && ws.readyState !== WebSocket.CLOSED) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          ws.terminate();
          resolve();
        }, 2_000);
        ws.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
        ws.close(1000, 'agent stopping');
      });
    }
    this.#end({});
  }

  #end(end: ConnectionEnd): void {
    this.#stopping = true;
    if (this.#reconnectTimer !== undefined) clearTimeout(this.#reconnectTimer);
    if (this.#firstRegistration !== undefined) {
      this.#firstRegistration.reject(end.fatal ?? new SvcError('SVC_ERR_AGENT_STOPPED', 'the agent stopped before it registered'));
      this.#firstRegistration = undefined;
    }
    this.#endResolve(end);
  }

  #connect(): void {
    if (this.#stopping) return;
    this.stats.connects++;
    const headers: Record<string, string> = {};
    if (this.#options.token !== undefined) headers['authorization'] = `Bearer ${this.#options.token}`;
    const ws = new WebSocket(this.#options.connectUrl, { headers, handshakeTimeout: 15_000, maxPayload: 64 * 1024 * 1024 });
    this.#ws = ws;
    let fatal: SvcError | undefined;
    let registerTimer: NodeJS.Timeout | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    let alive = true;

    ws.on('unexpected-response', (_req, res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      if (status === 401 || status === 403) {
        fatal = new AuthenticationError('SVC_ERR_AGENT_UNAUTHORIZED', `the orchestrator refused the agent token (HTTP ${status}); check SVC_AGENT_TOKEN: not retrying`);
      } else {
        this.#logger.warn({ status }, 'orchestrator refused the WebSocket upgrade');
      }
      ws.terminate();
    });
    ws.on('open', () => {
      this.#logger.debug({ url: this.#options.connectUrl }, 'connected; registering');
      ws.send(JSON.stringify(this.#options.register()));
      registerTimer = setTimeout(() => {
        this.#logger.warn('no agent.registered within the time limit; reconnecting');
        ws.terminate();
      }, REGISTER_TIMEOUT_MS);
      heartbeat = setInterval(() => {
        if (!alive) {
          this.#logger.warn('orchestrator stopped answering pings; reconnecting');
          ws.terminate();
          return;
        }
        alive = false;
        ws.ping();
      }, HEARTBEAT_MS);
    });
    ws.on('pong', () => (alive = true));
    ws.on('message', (data, isBinary) => {
      alive = true;
      if (isBinary) return;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data.toString());
      } catch {
        this.#logger.warn('orchestrator sent a frame that is not JSON; ignored');
        return;
      }
      const checked = checkIncoming.validate(parsed);
      if (!checked.ok) {
        this.#logger.warn({ issues: formatIssues(checked.issues) }, 'orchestrator sent a message that does not match the protocol; ignored');
        return;
      }
      const message = checked.value;
      if (message.type === 'agent.registered') {
        if (registerTimer !== undefined) clearTimeout(registerTimer);
        this.#registered = true;
        this.#peerProtocol = message.protocolVersion;
        this.#attempt = 0;
        this.stats.registrations++;
        this.#logger.info({ agentId: message.agentId, labels: message.labels }, 'registered with the orchestrator');
        const queued = this.#queue;
        this.#queue = [];
        // Queued before this registration: shaped for the orchestrator registered now.
        for (const m of queued) ws.send(JSON.stringify(forPeerProtocol(m, this.#peerProtocol)));
        if (this.#firstRegistration !== undefined) {
          this.#firstRegistration.resolve();
          this.#firstRegistration = undefined;
        }
      }
      this.#options.onMessage(message);
    });
    ws.on('error', (error) => {
      this.#logger.debug({ err: messageOf(error) }, 'connection error');
    });
    ws.on('close', (code, reasonBuffer) => {
      if (registerTimer !== undefined) clearTimeout(registerTimer);
      if (heartbeat !== undefined) clearInterval(heartbeat);
      this.#registered = false;
      if (this.#ws === ws) this.#ws = undefined;
      this.stats.closes.push(code);
      const reason = reasonBuffer.toString();
      if (code === WS_CLOSE_UNAUTHORIZED || code === WS_CLOSE_REFUSED) {
        fatal ??= new AuthenticationError('SVC_ERR_AGENT_UNAUTHORIZED', `the orchestrator refused this agent (close ${code}${reason ? `: ${reason}` : ''}); check SVC_AGENT_TOKEN and SVC_AGENT_ID: not retrying`);
      } else if (code === WS_CLOSE_PROTOCOL_ERROR) {
        fatal ??= new SvcError('SVC_ERR_AGENT_PROTOCOL', `the orchestrator closed the connection with a protocol error (close ${code}${reason ? `: ${reason}` : ''}); upgrade the agent and orchestrator together: not retrying`);
      }
      if (fatal !== undefined) {
        this.#logger.error({ code: fatal.code }, fatal.message);
        this.#end({ fatal });
        return;
      }
      if (this.#stopping) return;
      const delay = backoffDelay(this.#attempt++, {
        maxMs: this.#options.maxReconnectDelayMs,
        ...(this.#options.baseReconnectDelayMs === undefined ? {} : { baseMs: this.#options.baseReconnectDelayMs }),
        ...(this.#options.random === undefined ? {} : { random: this.#options.random }),
      });
      this.stats.delays.push(delay);
      this.#logger.warn({ code, reason, delayMs: delay }, 'disconnected from the orchestrator; reconnecting');
      this.#reconnectTimer = setTimeout(() => this.#connect(), delay);
    });
  }
}
