// `GET /v1/agents/connect`: the agent WebSocket. Authentication happens before the upgrade
// completes (the token is checked in preValidation) but is answered after it, with a close code
// the agent can act on: 4001 (bad, revoked or expired token: do not retry), 4003 (refused:
// same agent id with another token, or replaced), 1002 (protocol below the floor, or a first
// message other than `agent.register`). Every frame is validated; a bad frame gets
// `protocol.error` naming the path and changes nothing.
import { randomUUID } from 'node:crypto';
import websocket from '@fastify/websocket';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { compileMessageUnion, formatIssues } from '../../../schemas/validate.ts';
import { AgentToOrchestratorMembers, type AgentRegister, type OrchestratorToAgent } from '../../../schemas/wire/agent.ts';
import { MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, WS_CLOSE_PROTOCOL_ERROR, WS_CLOSE_REFUSED, WS_CLOSE_UNAUTHORIZED } from '../../../schemas/wire/relay.ts';
import { sql } from '../../services/db/index.ts';
import { isSvcError, messageOf } from '../../../core/errors.ts';
import type { OrchestratorContext } from '../context.ts';
import { effectiveLabels } from './labels.ts';
import { reattachJobs } from './recovery.ts';
import type { AgentSession } from './registry.ts';
import type { AgentMessage, DispatchService } from './service.ts';
import { appendLogChunk, applyJobStatus, applyStepStatus, storeJobContext } from './status.ts';
import { traceJobReport } from './trace-spans.ts';
import { nowMs } from '../../../core/tracing/index.ts';
import { checkAgentToken } from './tokens.ts';
import { PeerLiveness, watchPeer } from '../../services/ws-liveness.ts';
import { trackSocket } from '../../services/ws-metrics.ts';

export const AGENT_CONNECT_PATH = '/v1/agents/connect';
/** Largest frame an agent may send (a full log chunk is well under this). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024;

const checkInbound = compileMessageUnion(AgentToOrchestratorMembers);

type Auth = { ok: true; tokenHash: string | null } | { ok: false; reason: string };
const authByRequest = new WeakMap<FastifyRequest, Auth>();

function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** Close reasons are limited to 123 bytes. */
function closeReason(text: string): string {
  let out = text;
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1);
  return out;
}

export async function registerAgentEndpoint(ctx: OrchestratorContext, service: DispatchService): Promise<void> {
  const logger = ctx.logger.child({ component: 'agent-endpoint' });
  // Other subsystems may serve WebSockets too: register the plugin once per server.
  if (!ctx.http.hasDecorator('websocketServer')) {
    await ctx.http.register(websocket, { options: { maxPayload: MAX_FRAME_BYTES } });
  }
  ctx.http.get(AGENT_CONNECT_PATH, {
    websocket: true,
    preValidation: async (request) => {
      if (ctx.config.agentAuth === 'none') {
        authByRequest.set(request, { ok: true, tokenHash: null });
        return;
      }
      const token = bearer(request);
      if (token === undefined) {
        authByRequest.set(request, { ok: false, reason: 'missing agent token (Authorization: Bearer <token>)' });
        return;
      }
      try {
        const check = await checkAgentToken(ctx.db, token);
        authByRequest.set(request, check.ok ? { ok: true, tokenHash: check.tokenHash } : { ok: false, reason: check.reason });
      } catch (error) {
        logger.error({ err: messageOf(error) }, 'agent token check failed');
        authByRequest.set(request, { ok: false, reason: 'token check unavailable' });
      }
    },
  }, (socket, request) => {
    const auth = authByRequest.get(request) ?? { ok: false, reason: 'not authenticated' };
    if (!auth.ok) {
      logger.warn({ reason: auth.reason, ip: request.ip }, 'agent refused');
      socket.close(WS_CLOSE_UNAUTHORIZED, closeReason(auth.reason));
      return;
    }
    trackSocket(ctx.metrics, 'agent', socket);
    new AgentConnection(ctx, service, socket, auth.tokenHash, request.ip).start();
  });
}

class AgentConnection {
  readonly #ctx: OrchestratorContext;
  readonly #service: DispatchService;
  readonly #socket: WebSocket;
  readonly #tokenHash: string | null;
  readonly #logger;
  #session: AgentSession | undefined;
  #registering = false;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  /** This side closed the socket (refusal, protocol error): later frames are not handled. */
  #refusing = false;
  #liveness = new PeerLiveness();
  #timers: NodeJS.Timeout[] = [];

  constructor(ctx: OrchestratorContext, service: DispatchService, socket: WebSocket, tokenHash: string | null, ip: string) {
    this.#ctx = ctx;
    this.#service = service;
    this.#socket = socket;
    this.#tokenHash = tokenHash;
    this.#logger = ctx.logger.child({ component: 'agent', ip });
  }

  start(): void {
    const socket = this.#socket;
    socket.on('message', (data, isBinary) => {
      this.#liveness.heard();
      // One frame at a time, in order: a step's status lands before the job's.
      this.#chain = this.#chain.then(() => this.#onFrame(data as Buffer, isBinary)).catch((error: unknown) => {
        this.#logger.error({ err: messageOf(error) }, 'agent frame handling failed');
      });
    });
    socket.on('close', () => this.#onClose());
    socket.on('error', (error) => this.#logger.debug({ err: messageOf(error) }, 'agent socket error'));
    const registerTimer = setTimeout(() => {
      if (this.#session === undefined && !this.#registering) this.#close(WS_CLOSE_PROTOCOL_ERROR, 'agent.register not received in time');
    }, this.#service.options.registerTimeoutMs);
    const heartbeat = watchPeer(socket, this.#liveness, this.#service.options.heartbeatMs, () => {
      this.#logger.warn({ agentId: this.#session?.agentId }, 'agent missed a heartbeat; closing its socket');
      socket.terminate();
    });
    this.#timers.push(registerTimer, heartbeat);
  }

  #send(message: OrchestratorToAgent): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#closed || this.#socket.readyState !== this.#socket.OPEN) {
        reject(new Error('agent socket is not open'));
        return;
      }
      this.#socket.send(JSON.stringify(message), (error) => (error ? reject(error) : resolve()));
    });
  }

  #reply(message: OrchestratorToAgent): void {
    this.#send(message).catch((error: unknown) => this.#logger.debug({ err: messageOf(error) }, 'reply not sent'));
  }

  #protocolError(code: string, message: string, requestId?: string): void {
    this.#reply({ type: 'protocol.error', error: { code, message }, ...(requestId === undefined ? {} : { requestId }) });
  }

  #close(code: number, reason: string): void {
    if (this.#closed || this.#refusing) return;
    this.#refusing = true;
    this.#socket.close(code, closeReason(reason));
  }

  async #onFrame(data: Buffer, isBinary: boolean): Promise<void> {
    // Frames that arrived before the peer closed are still handled (see #onClose); frames after
    // a close this side started are not.
    if (this.#refusing) return;
    if (isBinary) {
      this.#protocolError('SVC_ERR_PROTOCOL_FRAME', 'frames must be JSON text');
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(data.toString('utf8'));
    } catch {
      this.#protocolError('SVC_ERR_PROTOCOL_JSON', 'frame is not valid JSON');
      return;
    }
    const requestId = typeof (value as { requestId?: unknown })?.requestId === 'string' ? ((value as { requestId: string }).requestId) : undefined;
    // The floor is checked before the shape: an older agent's register may not match ours.
    if (this.#session === undefined && (value as { type?: unknown })?.type === 'agent.register') {
      const version = (value as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'number' && version < MIN_PROTOCOL_VERSION) {
        this.#logger.warn({ version }, 'agent protocol below the floor');
        this.#close(WS_CLOSE_PROTOCOL_ERROR, `protocol version ${version} is below the minimum ${MIN_PROTOCOL_VERSION}; upgrade the agent`);
        return;
      }
    }
    const checked = checkInbound.validate(value);
    if (!checked.ok) {
      this.#protocolError('SVC_ERR_PROTOCOL_INVALID', formatIssues(checked.issues), requestId);
      return;
    }
    const message = checked.value as AgentMessage;
    if (message.type === 'agent.register') {
      if (this.#session !== undefined || this.#registering) {
        this.#protocolError('SVC_ERR_PROTOCOL_ALREADY_REGISTERED', 'this connection is already registered');
        return;
      }
      await this.#register(message);
      return;
    }
    const session = this.#session;
    if (session === undefined) {
      this.#protocolError('SVC_ERR_PROTOCOL_NOT_REGISTERED', 'the first message must be agent.register');
      this.#close(WS_CLOSE_PROTOCOL_ERROR, 'the first message must be agent.register');
      return;
    }
    try {
      await this.#handle(session, message);
    } catch (error) {
      if (isSvcError(error)) {
        this.#protocolError(error.code, error.message, requestId);
      } else {
        this.#logger.error({ err: messageOf(error), type: message.type }, 'agent message failed');
        this.#protocolError('SVC_ERR_INTERNAL', 'the orchestrator could not process this message', requestId);
      }
    }
  }

  async #handle(session: AgentSession, message: AgentMessage): Promise<void> {
    const pool = this.#ctx.db;
    switch (message.type) {
      case 'job.status': {
        const tracing = this.#ctx.tracing;
        const receivedAt = tracing?.enabled === true ? nowMs() : 0;
        const outcome = await applyJobStatus(pool, session.agentId, message);
        if (tracing?.enabled === true && outcome.terminal) {
          await traceJobReport(tracing, pool, message.jobId, receivedAt, (outcome.progression?.runFinished ?? null) !== null).catch((error: unknown) =>
            this.#ctx.logger.warn({ err: error, jobId: message.jobId }, 'could not record the spans of a job report'),
          );
        }
        if (outcome.terminal || outcome.duplicate) {
          session.activeJobs.delete(message.jobId);
          this.#service.dispatcher.wake();
        }
        return;
      }
      case 'step.status':
        await applyStepStatus(pool, session.agentId, message);
        return;
      case 'log.chunk':
        await appendLogChunk(pool, session.agentId, message);
        return;
      case 'job.context':
        await storeJobContext(pool, session.agentId, message);
        return;
      default: {
        const handler = this.#service.handlerFor(message.type);
        if (handler !== undefined) {
          const answer = await handler({ agentId: session.agentId, labels: session.labels }, message as never);
          if (answer !== undefined) this.#reply(answer);
          return;
        }
        this.#reply(unhandled(message));
      }
    }
  }

  async #register(message: AgentRegister): Promise<void> {
    this.#registering = true;
    let labels: string[];
    try {
      labels = effectiveLabels({ os: message.os, arch: message.arch, ephemeral: message.ephemeral, sandboxes: message.sandboxes, labels: message.labels });
    } catch (error) {
      this.#registering = false;
      this.#protocolError(isSvcError(error) ? error.code : 'SVC_ERR_PROTOCOL_INVALID', messageOf(error));
      this.#close(WS_CLOSE_REFUSED, messageOf(error));
      return;
    }
    const sessionId = randomUUID();
    const agentId = message.agentId;
    const outcome = await this.#ctx.db.transaction(async (tx) => {
      const existing = (await tx.maybeOne(sql.unsafe`SELECT token_hash FROM agents WHERE id = ${agentId} FOR UPDATE`)) as { token_hash: string | null } | null;
      if (existing !== null && existing.token_hash !== null && this.#tokenHash !== null && existing.token_hash !== this.#tokenHash) {
        return { refused: true as const };
      }
      // An agent a scaler started must carry what the scaler promised (its mandatory labels).
      const refusal = await this.#service.registrationCheck?.(tx, { agentId, labels });
      if (refusal !== undefined && refusal !== null) return { refused: 'labels' as const, error: refusal };
      const notes = message.unavailableSandboxes ?? [];
      await tx.query(sql.unsafe`
        INSERT INTO agents (id, token_hash, labels, ephemeral, connected, node_id, last_seen_at, session_id, os, arch, sandboxes, sdk_version, connected_at, unavailable_sandboxes, protocol_version)
        VALUES (${agentId}, ${this.#tokenHash}, ${sql.array(labels, 'text')}, ${message.ephemeral}, true, ${this.#ctx.nodeId}, now(),
                ${sessionId}, ${message.os}, ${message.arch}, ${sql.array(message.sandboxes, 'text')}, ${message.sdkVersion}, now(), ${sql.jsonb(notes)}, ${spokenProtocol(message)})
        ON CONFLICT (id) DO UPDATE SET token_hash = coalesce(agents.token_hash, excluded.token_hash), labels = excluded.labels,
          ephemeral = excluded.ephemeral, connected = true, node_id = excluded.node_id, last_seen_at = now(), session_id = excluded.session_id,
          os = excluded.os, arch = excluded.arch, sandboxes = excluded.sandboxes, sdk_version = excluded.sdk_version, connected_at = now(),
          unavailable_sandboxes = excluded.unavailable_sandboxes, protocol_version = excluded.protocol_version`);
      const reattach = await reattachJobs(tx, agentId, message.inFlightJobs);
      return { refused: false as const, reattach };
    }).catch((error: unknown) => {
      this.#logger.error({ err: messageOf(error), agentId }, 'agent registration failed');
      return { refused: null };
    });
    this.#registering = false;
    if (outcome.refused === null) {
      this.#close(1011, 'registration failed; retry later');
      return;
    }
    if (outcome.refused === 'labels') {
      this.#logger.warn({ agentId, labels, err: outcome.error.message }, 'scaled-up agent refused: it registered without its mandatory labels');
      this.#protocolError(outcome.error.code, outcome.error.message);
      this.#close(WS_CLOSE_REFUSED, outcome.error.message);
      return;
    }
    if (outcome.refused) {
      this.#logger.warn({ agentId }, 'agent id already registered with a different token; refused');
      this.#close(WS_CLOSE_REFUSED, `agent id ${agentId} is registered with a different token`);
      return;
    }
    if (this.#closed) {
      // The socket went away while registering: treat it as an immediate disconnect.
      this.#service.sessionEnded(this.#makeSession(message, labels, sessionId, []));
      return;
    }
    const session = this.#makeSession(message, labels, sessionId, outcome.reattach.reattached);
    this.#session = session;
    const replaced = this.#service.registry.add(session);
    if (replaced !== undefined) replaced.close(WS_CLOSE_REFUSED, 'replaced by a newer connection of the same agent');
    this.#service.sessionAdded();
    this.#logger.info({ agentId, labels, reattached: outcome.reattach.reattached, lost: outcome.reattach.lost }, 'agent registered');
    await this.#send({ type: 'agent.registered', agentId, labels, protocolVersion: PROTOCOL_VERSION }).catch(() => undefined);
    for (const stop of outcome.reattach.stop) this.#reply({ type: 'job.cancel', jobId: stop.jobId, reason: stop.reason, force: true });
    this.#service.dispatcher.wake();
  }

  #makeSession(message: AgentRegister, labels: string[], sessionId: string, active: readonly string[]): AgentSession {
    return {
      agentId: message.agentId,
      sessionId,
      labels,
      labelSet: new Set(labels),
      ephemeral: message.ephemeral,
      os: message.os,
      arch: message.arch,
      protocolVersion: spokenProtocol(message),
      activeJobs: new Set(active),
      capacity: 1,
      dispatchedCount: active.length,
      lastDispatchAt: 0,
      send: (m) => this.#send(m),
      close: (code, reason) => {
        this.#superseded = code === WS_CLOSE_REFUSED;
        this.#close(code, reason);
      },
    };
  }

  #superseded = false;

  #onClose(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    // The session ends only after every frame received before the close is handled: an ephemeral
    // agent sends its job's result and leaves at once, and ending the session first would fail
    // that job as "disconnected while the job was running" and drop the result queued behind it.
    this.#chain = this.#chain.then(() => this.#endSession());
  }

  #endSession(): void {
    const session = this.#session;
    if (session === undefined) return;
    const current = this.#service.registry.remove(session);
    // A session replaced by a newer one of the same agent hands its jobs over: nothing moves.
    if (current && !this.#superseded) this.#service.sessionEnded(session);
    else if (!current) this.#service.sessionAdded();
    this.#logger.info({ agentId: session.agentId }, 'agent disconnected');
  }
}

/**
 * The protocol a session speaks: the agent's, or ours when the agent is newer (the lower of the
 * two is what both understand; a huge number never reaches the integer column).
 */
function spokenProtocol(message: AgentRegister): number {
  return Math.min(message.protocolVersion, PROTOCOL_VERSION);
}

/** The answer to a request no subsystem has claimed yet. */
function unhandled(message: AgentMessage): OrchestratorToAgent {
  const error = { code: 'SVC_ERR_DISPATCH_UNSUPPORTED', message: `${message.type} is not served by this orchestrator` };
  switch (message.type) {
    case 'oidc.token.request':
      // Identity not wired: the spec's deferral, so a step that needs a token fails clearly.
      return { type: 'oidc.token.response', requestId: message.requestId, deferred: true, code: 'unavailable' };
    case 'event.emit':
      return { type: 'event.emit.response', requestId: message.requestId, error };
    case 'cache.upload.request':
      return { type: 'cache.upload.response', requestId: message.requestId, error };
    case 'cache.user.restore.request':
      return { type: 'cache.user.restore.response', requestId: message.requestId, hit: false, error };
    case 'cache.user.save.request':
      return { type: 'cache.user.save.response', requestId: message.requestId, skip: false, error };
    default:
      return { type: 'protocol.error', error };
  }
}
