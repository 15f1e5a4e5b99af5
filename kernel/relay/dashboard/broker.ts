// Request/response pairs over the orchestrator sockets: a dashboard or CLI request goes to one
// connected orchestrator of the org (fewest requests waiting first) with a fresh `requestId`, and
// waits for the response with that id, at most `timeoutMs`. A socket that closes fails its
// waiting requests at once instead of letting them time out.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { RelayToOrchestratorMembers, type OrchestratorToRelay, type RelayToOrchestrator } from '../../../schemas/wire/relay.ts';
import { compileMessageUnion } from '../../../schemas/validate.ts';
import { InputError, UnavailableError } from '../../../core/errors.ts';
import { unstorableText } from '../../services/http/index.ts';
import type { OrchestratorConnection, OrchestratorPool } from '../orchestrator-pool.ts';

/** The orchestrator's own check of relay frames (relay-link/connect.ts), applied before sending. */
const checkOutgoing = compileMessageUnion(RelayToOrchestratorMembers);

export type BrokerRequest = Extract<RelayToOrchestrator, { requestId: string }>;
export type BrokerResponse = Extract<OrchestratorToRelay, { requestId: string }>;
type ResponseFor<T extends BrokerRequest['type']> = Extract<
  BrokerResponse,
  {
    type: T extends 'dashboard.payload' ? 'dashboard.payload.response' : T extends `${infer Noun}.request` ? `${Noun}.response` : never;
  }
>;

/** Request without its id: the broker assigns one. */
export type Outgoing<T extends BrokerRequest> = T extends unknown ? Omit<T, 'requestId'> : never;

const RESPONSE_OF: Record<BrokerRequest['type'], BrokerResponse['type']> = {
  'run.rerun.request': 'run.rerun.response',
  'run.cancel.request': 'run.cancel.response',
  'run.approve.request': 'run.approve.response',
  'dashboard.payload': 'dashboard.payload.response',
  'run.show.request': 'run.show.response',
  'run.logs.request': 'run.logs.response',
  'run.artifacts.request': 'run.artifacts.response',
  'run.artifact.chunk.request': 'run.artifact.chunk.response',
  'org.secrets.list.request': 'org.secrets.list.response',
  'org.secret.set.request': 'org.secret.set.response',
  'org.notifications.request': 'org.notifications.response',
  'remote.upload.request': 'remote.upload.response',
  'remote.run.request': 'remote.run.response',
  'deliveries.list.request': 'deliveries.list.response',
  'delivery.payload.request': 'delivery.payload.response',
  'fleet.request': 'fleet.response',
  'run.detail.request': 'run.detail.response',
  'run.attestation.request': 'run.attestation.response',
  'run.timeline.request': 'run.timeline.response',
  'tests.request': 'tests.response',
  'logs.search.request': 'logs.search.response',
  'audit.record.request': 'audit.record.response',
  'audit.list.request': 'audit.list.response',
  'people.sync.request': 'people.sync.response',
};

interface Pending {
  connection: OrchestratorConnection;
  expected: BrokerResponse['type'];
  settle(result: { ok: true; response: BrokerResponse } | { ok: false; error: Error }): void;
}

export interface BrokerOptions {
  pool: OrchestratorPool;
  logger: Logger;
  timeoutMs: number;
  /** How often sockets of waiting requests are checked for having closed. */
  sweepMs?: number;
}

export class DashboardBroker {
  readonly #options: BrokerOptions;
  readonly #pending = new Map<string, Pending>();
  readonly #perConnection = new Map<string, number>();
  readonly #sweep: NodeJS.Timeout;

  constructor(options: BrokerOptions) {
    this.#options = options;
    this.#sweep = setInterval(() => this.#failClosed(), options.sweepMs ?? 250);
    this.#sweep.unref();
  }

  get waiting(): number {
    return this.#pending.size;
  }

  /** Sends to one orchestrator of `orgId` and resolves with its response; UnavailableError otherwise. */
  async request<M extends Outgoing<BrokerRequest>>(orgId: string, message: M): Promise<ResponseFor<M['type']>> {
    const requestId = randomUUID();
    const full = { ...message, requestId } as BrokerRequest;
    // The orchestrator drops a frame its check refuses, without an answer: a request built from
    // what a caller sent (an empty path segment, say) is refused here, not after the timeout.
    const checked = checkOutgoing.validate(full);
    if (!checked.ok) {
      // Paths only: an issue may quote a value (a secret's).
      const fields = [...new Set(checked.issues.map((i) => i.path || '(frame)'))].join(', ');
      throw new InputError('SVC_ERR_HTTP_BAD_REQUEST', `the request cannot be passed to an orchestrator (the link refuses ${fields}): check the path and the body`);
    }
    // Text PostgreSQL cannot store (NUL, an unpaired surrogate) would fail the orchestrator's
    // write as an internal error: refused here, naming the field only (it may be a secret).
    const unstorable = unstorableText(full);
    if (unstorable !== undefined) {
      throw new InputError('SVC_ERR_HTTP_INVALID_BODY', `invalid request: ${unstorable.path || 'a value'} ${unstorable.message}`);
    }
    const candidates = this.#options.pool.connections(orgId).filter((c) => !c.closed);
    if (candidates.length === 0) {
      throw new UnavailableError(
        'SVC_ERR_RELAY_NO_ORCHESTRATOR',
        `no orchestrator of org ${orgId} is connected to the relay; start one (check its SVC_PLATFORM_URL and SVC_PLATFORM_TOKEN) and retry`,
      );
    }
    const connection = candidates.reduce((best, c) => ((this.#perConnection.get(c.connId) ?? 0) < (this.#perConnection.get(best.connId) ?? 0) ? c : best));
    const expected = RESPONSE_OF[full.type];
    const response = await new Promise<BrokerResponse>((resolve, reject) => {
      const timer = setTimeout(
        () => finish({ ok: false, error: new UnavailableError('SVC_ERR_RELAY_ORCHESTRATOR_TIMEOUT', `the orchestrator ${connection.orchestratorId} did not answer ${full.type} within ${this.#options.timeoutMs} ms; retry shortly`, { details: { status: 504 } }) }),
        this.#options.timeoutMs,
      );
      const finish: Pending['settle'] = (result) => {
        if (this.#pending.get(requestId)?.settle !== finish) return;
        this.#pending.delete(requestId);
        const left = (this.#perConnection.get(connection.connId) ?? 1) - 1;
        if (left <= 0) this.#perConnection.delete(connection.connId);
        else this.#perConnection.set(connection.connId, left);
        clearTimeout(timer);
        if (result.ok) resolve(result.response);
        else reject(result.error);
      };
      this.#pending.set(requestId, { connection, expected, settle: finish });
      this.#perConnection.set(connection.connId, (this.#perConnection.get(connection.connId) ?? 0) + 1);
      if (!connection.send(full)) finish({ ok: false, error: this.#closedError(connection) });
    });
    return response as ResponseFor<M['type']>;
  }

  /** A response frame from an orchestrator socket; false when no request waits for it there. */
  handleResponse(connection: OrchestratorConnection, message: BrokerResponse): boolean {
    const pending = this.#pending.get(message.requestId);
    // Only the socket a request went out on may answer it, with the matching type.
    if (pending === undefined || pending.connection !== connection || pending.expected !== message.type) {
      this.#options.logger.debug({ type: message.type, requestId: message.requestId }, 'response for no waiting request (late, or from another socket)');
      return false;
    }
    pending.settle({ ok: true, response: message });
    return true;
  }

  #closedError(connection: OrchestratorConnection): UnavailableError {
    return new UnavailableError('SVC_ERR_RELAY_ORCHESTRATOR_GONE', `the orchestrator ${connection.orchestratorId} disconnected before it answered; retry`);
  }

  #failClosed(): void {
    for (const pending of [...this.#pending.values()]) if (pending.connection.closed) pending.settle({ ok: false, error: this.#closedError(pending.connection) });
  }

  close(): void {
    clearInterval(this.#sweep);
    for (const pending of [...this.#pending.values()]) pending.settle({ ok: false, error: new UnavailableError('SVC_ERR_RELAY_STOPPING', 'the relay is stopping; retry shortly') });
  }
}
