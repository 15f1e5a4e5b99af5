// Connected orchestrators per org (the candidate pool) and one delivery attempt across them:
// candidates in turn (least in flight first, round robin among equals), a per-candidate ack
// ceiling, a total budget, and sockets whose send buffer is past the watermark skipped.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import { PROTOCOL_VERSION, TRACE_PROTOCOL_VERSION, type RelayToOrchestrator, type WebhookAck, type WebhookDeliver } from '../../schemas/wire/relay.ts';
import type { RelayMetrics } from './relay-metrics.ts';

export type AttemptResult = { kind: 'ack'; ack: WebhookAck } | { kind: 'timeout' } | { kind: 'closed' };

/**
 * Starts the ack ceiling of one attempt on one orchestrator: calls `fire` once `ms` have passed and
 * returns a cancel. The relay uses `realAckTimer`; a test injects its own so a prompt candidate's
 * ack does not race a short ceiling on a busy machine (it fires a hanging candidate's ceiling only).
 */
export type AckTimer = (ms: number, fire: () => void, orchestratorId: string) => () => void;

export const realAckTimer: AckTimer = (ms, fire) => {
  const timer = setTimeout(fire, Math.max(1, ms));
  return () => clearTimeout(timer);
};

/** An orchestrator older than the trace context refuses the field (its schema is strict). */
function withoutTrace(message: WebhookDeliver): WebhookDeliver {
  const { traceparent: _traceparent, tracestate: _tracestate, ...rest } = message;
  return rest;
}

/** One orchestrator socket past hello. */
export class OrchestratorConnection {
  readonly connId = randomUUID();
  readonly orgId: string;
  readonly orchestratorId: string;
  readonly #socket: WebSocket;
  readonly #pending = new Map<string, (result: AttemptResult) => void>();
  #closed = false;
  /** When the hello was accepted (`svc orchestrators`). */
  readonly connectedAt = new Date();
  /** The orchestrator's software version from its hello; null when it sent none. */
  readonly version: string | null;
  /** The last frame or heartbeat answer from the orchestrator. */
  lastSeenAt = new Date();

  /** The protocol version of the orchestrator's hello: below TRACE_PROTOCOL_VERSION it refuses a trace context. */
  readonly protocolVersion: number;

  constructor(socket: WebSocket, orgId: string, orchestratorId: string, version: string | null = null, protocolVersion: number = PROTOCOL_VERSION) {
    this.#socket = socket;
    this.orgId = orgId;
    this.orchestratorId = orchestratorId;
    this.version = version;
    this.protocolVersion = protocolVersion;
  }

  touch(): void {
    this.lastSeenAt = new Date();
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  get bufferedAmount(): number {
    return this.#socket.bufferedAmount;
  }

  get closed(): boolean {
    return this.#closed || this.#socket.readyState !== this.#socket.OPEN;
  }

  send(message: RelayToOrchestrator): boolean {
    if (this.closed) return false;
    this.#socket.send(JSON.stringify(message));
    return true;
  }

  /** Sends one delivery and waits for its ack, at most `timeoutMs` (as `timer` measures it). Never rejects. */
  deliver(message: WebhookDeliver, timeoutMs: number, timer: AckTimer = realAckTimer): Promise<AttemptResult> {
    if (this.closed) return Promise.resolve({ kind: 'closed' });
    return new Promise<AttemptResult>((resolve) => {
      const ref = message.deliveryRef;
      const finish = (result: AttemptResult): void => {
        if (this.#pending.get(ref) !== finish) return;
        this.#pending.delete(ref);
        cancel();
        resolve(result);
      };
      let cancel: () => void = () => undefined;
      this.#pending.set(ref, finish);
      cancel = timer(timeoutMs, () => finish({ kind: 'timeout' }), this.orchestratorId);
      const sent = message.traceparent !== undefined && this.protocolVersion < TRACE_PROTOCOL_VERSION ? withoutTrace(message) : message;
      this.#socket.send(JSON.stringify(sent), (error) => {
        if (error) finish({ kind: 'closed' });
      });
    });
  }

  /** Routes an ack to its waiting delivery; false for an unknown or late ref. */
  handleAck(ack: WebhookAck): boolean {
    const finish = this.#pending.get(ack.deliveryRef);
    if (finish === undefined) return false;
    finish({ kind: 'ack', ack });
    return true;
  }

  /** The socket is gone: every waiting delivery moves on to the next candidate. */
  markClosed(): void {
    this.#closed = true;
    for (const finish of [...this.#pending.values()]) finish({ kind: 'closed' });
  }
}

export interface Candidate {
  readonly inFlight: number;
  readonly bufferedAmount: number;
}

/**
 * Order in which to try candidates: round robin from `start`, then least in flight first (stable,
 * so equals keep their round-robin order). Sockets past the watermark are left out.
 */
export function orderCandidates<T extends Candidate>(candidates: readonly T[], start: number, watermarkBytes: number): { ordered: T[]; skipped: T[] } {
  const n = candidates.length;
  const rotated: T[] = [];
  for (let i = 0; i < n; i++) rotated.push(candidates[(start + i) % n] as T);
  const skipped = rotated.filter((c) => c.bufferedAmount > watermarkBytes);
  const ordered = rotated.filter((c) => c.bufferedAmount <= watermarkBytes).sort((a, b) => a.inFlight - b.inFlight);
  return { ordered, skipped };
}

export interface OrchestratorPoolOptions {
  watermarkBytes: number;
  /** The per-candidate ack ceiling's timer; `realAckTimer` unless a test injects one. */
  ackTimer?: AckTimer;
  metrics: RelayMetrics;
  logger: Logger;
}

export class OrchestratorPool {
  readonly #byOrg = new Map<string, OrchestratorConnection[]>();
  readonly #next = new Map<string, number>();
  readonly #options: OrchestratorPoolOptions;

  constructor(options: OrchestratorPoolOptions) {
    this.#options = options;
  }

  add(connection: OrchestratorConnection): void {
    const list = this.#byOrg.get(connection.orgId) ?? [];
    list.push(connection);
    this.#byOrg.set(connection.orgId, list);
    this.#options.metrics.orchestrators.inc();
  }

  remove(connection: OrchestratorConnection): void {
    const list = this.#byOrg.get(connection.orgId);
    const index = list?.indexOf(connection) ?? -1;
    if (list === undefined || index === -1) return;
    list.splice(index, 1);
    if (list.length === 0) this.#byOrg.delete(connection.orgId);
    this.#options.metrics.orchestrators.dec();
  }

  connections(orgId: string): readonly OrchestratorConnection[] {
    return this.#byOrg.get(orgId) ?? [];
  }

  hasCandidates(orgId: string): boolean {
    return this.connections(orgId).some((c) => !c.closed);
  }

  all(): OrchestratorConnection[] {
    return [...this.#byOrg.values()].flat();
  }

  /**
   * Offers a delivery to the org's candidates in turn until one acks, the candidates run out,
   * or `deadline` (epoch ms) passes. Undefined means nobody answered: the caller buffers.
   */
  async deliver(orgId: string, message: WebhookDeliver, perCandidateMs: number, deadline: number): Promise<WebhookAck | undefined> {
    const candidates = this.connections(orgId).filter((c) => !c.closed);
    if (candidates.length === 0) return undefined;
    const start = this.#next.get(orgId) ?? 0;
    this.#next.set(orgId, (start + 1) % 1_000_000);
    const { ordered, skipped } = orderCandidates(candidates, start % candidates.length, this.#options.watermarkBytes);
    for (const c of skipped) this.#options.logger.warn({ orgId, orchestratorId: c.orchestratorId, bufferedAmount: c.bufferedAmount }, 'orchestrator socket past its send-buffer watermark; skipped');
    for (const candidate of ordered) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      // The buffer may have grown since the order was made.
      if (candidate.closed || candidate.bufferedAmount > this.#options.watermarkBytes) continue;
      const started = performance.now();
      const result = await candidate.deliver(message, Math.min(perCandidateMs, left), this.#options.ackTimer);
      const seconds = (performance.now() - started) / 1000;
      if (result.kind === 'ack') {
        this.#options.metrics.ackSeconds.observe({ result: result.ack.result }, seconds);
        return result.ack;
      }
      this.#options.metrics.ackSeconds.observe({ result: result.kind }, seconds);
      this.#options.logger.warn(
        { orgId, orchestratorId: candidate.orchestratorId, deliveryId: message.deliveryId, outcome: result.kind },
        'orchestrator candidate did not ack; trying the next',
      );
    }
    return undefined;
  }
}
