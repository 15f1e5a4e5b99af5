// Shapes shared by the ingest steps: the delivery as it arrives (from the relay or, in
// independent mode, straight from HTTP), the pipeline's answer, and the per-delivery state the
// steps fill in order.
import type { Logger } from 'pino';
import { nowMs, TraceSteps, type TraceSpan, type Tracing } from '../../../core/tracing/index.ts';
import type { NormalizedEvent } from '../../../schemas/event.ts';
import type { Lock } from '../../../schemas/lock.ts';
import type { AckResult } from '../../../schemas/wire/relay.ts';
import type { RepositoryRef, SourceProviderExtensionPoint } from '../../../core/extension-points/provider.ts';
import type { OpenedSource } from '../sources/store.ts';

export const DELIVERY_STATUSES = [
  'matched',
  'no_match',
  'no_lock_file',
  'duplicate',
  'shed',
  'rejected_signature',
  'rejected_unknown_source',
  'rejected_misconfigured',
  'lockfile_corrupt',
  'ignored_fork',
  'skipped',
  'approval_command',
  // Kept after a passing failure and retried by the orchestrator (retry/store.ts); `failed` once given up, or never retryable.
  'retrying',
  'failed',
] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface IncomingDelivery {
  orgId: string;
  routingKey: string;
  providerKind: string;
  /** Generic sources: the URL's source id. */
  sourceId?: string;
  /** Provider delivery id, or a UUID the relay generated. */
  deliveryId: string;
  /** The relay's forward span (webhook.deliver's traceparent): the ingest span's parent. */
  traceparent?: string;
  tracestate?: string;
  /** Lower-cased names. */
  headers: Readonly<Record<string, string>>;
  /** The exact bytes the sender signed. */
  body: Buffer;
  receivedAt: Date;
  clientIp: string;
  replay: boolean;
}

/** What the relay (or the independent HTTP route) is told. */
export interface IngestOutcome {
  result: AckResult;
  retryAfterSeconds?: number;
  message?: string;
  /** The delivery record's status. */
  status: DeliveryStatus;
  runIds: string[];
  deliveryId: string;
}

export interface StepEntry {
  step: string;
  outcome: string;
  detail?: string;
}

/** Where a traced delivery's steps go: each step lasts from the previous step's end to its own `add`. */
interface StepTrace {
  tracing: Tracing;
  /** The ingest span. */
  parent: TraceSpan;
  steps: TraceSteps;
  last: number;
}

/** Steps in the spec's order; each appends its outcome here and logs it at debug. */
export class StepLog {
  readonly entries: StepEntry[] = [];
  readonly #logger: () => Logger;
  readonly #debug: boolean;
  #trace: StepTrace | undefined;

  /** `logger` is called only when debug is on (a per-delivery child logger is not free). */
  constructor(logger: Logger | (() => Logger), debug?: boolean) {
    this.#logger = typeof logger === 'function' ? logger : () => logger;
    this.#debug = debug ?? (typeof logger === 'function' ? true : logger.isLevelEnabled('debug'));
  }

  add(step: string, outcome: string, detail?: string): void {
    // NUL cannot be stored in jsonb; a detail may quote a payload.
    const entry: StepEntry = detail === undefined ? { step, outcome } : { step, outcome, detail: detail.slice(0, 2000).replaceAll('\0', '\uFFFD') };
    this.entries.push(entry);
    if (this.#debug) this.#logger().debug(entry, 'ingest step');
    if (this.#trace !== undefined) this.#span(step, { 'svc.ingest.outcome': outcome });
  }

  /** Each step from here on is a span or an event of `parent` (`TraceSteps`; docs/tracing.md, "Spans"). */
  trace(tracing: Tracing, parent: TraceSpan, start: number): void {
    this.#trace = { tracing, parent, steps: new TraceSteps(tracing, parent, 'ingest', 'svc.ingest.step'), last: start };
  }

  /** The time since the last step (the runs' and record's write after the last `add`), the delivery's last step: its short steps go out before the span ends. */
  traceRest(name: string): void {
    if (this.#trace === undefined) return;
    this.#span(name);
    this.#trace.steps.flush();
  }

  /** A run's span, reserved under the ingest span: stored with the run (`runs.trace_context`, `trace_parent`). */
  reserveRunSpan(): { context: string; parent: string } | undefined {
    const parent = this.#trace?.parent.traceparent;
    const context = this.#trace?.tracing.reserve(parent);
    return context === undefined || parent === undefined ? undefined : { context, parent };
  }

  #span(step: string, attributes?: Record<string, string>): void {
    const trace = this.#trace!;
    const now = nowMs();
    trace.steps.step(step, trace.last, now, attributes);
    trace.last = now;
  }
}

export type TrustTier = 'trusted' | 'unknown' | 'unresolved';

/** Everything a delivery gathered on its way through the steps. */
export interface DeliveryState {
  delivery: IncomingDelivery;
  steps: StepLog;
  logger: Logger;
  source?: OpenedSource;
  provider?: SourceProviderExtensionPoint;
  payload?: unknown;
  event?: NormalizedEvent;
  repository?: RepositoryRef;
  trust: { tier: TrustTier; isFork: 'true' | 'false' | 'unresolved' };
  /** Commit the lock was read at (the base for an untrusted pull request). */
  lockSha?: string;
  lock?: Lock;
  workflowModified: boolean;
  changedFiles?: string[] | null;
  changedFilesUnavailable?: string;
  /** Generic sources: processings of this id after its idempotency window (known once claimed). */
  generation: number;
  /** Set by the dedup step: how the record is claimed when it is written. */
  claim?: ClaimOptions;
  /** `performance.now()` when admission let the delivery in (stage-metrics.ts). */
  admittedAt?: number;
}

export class IngestStop extends Error {
  readonly status: DeliveryStatus;
  readonly result: AckResult;
  readonly detail: string;
  readonly retryAfterSeconds: number | undefined;

  constructor(status: DeliveryStatus, result: AckResult, detail: string, retryAfterSeconds?: number) {
    super(detail);
    this.status = status;
    this.result = result;
    this.detail = detail;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** Ends the pipeline early with a recorded status (no_lock_file, ignored_fork, …). */
export function stop(status: DeliveryStatus, detail: string, result: AckResult = 'accepted', retryAfterSeconds?: number): never {
  throw new IngestStop(status, result, detail, retryAfterSeconds);
}

/** Who claims a delivery record, and (generic sources) for how long a finished one stays a duplicate. */
export interface ClaimOptions {
  sourceId: string;
  nodeId: string;
  /** Generic sources' idempotency window: a finished record older than this is processed again as a new generation. */
  windowSeconds?: number;
}
