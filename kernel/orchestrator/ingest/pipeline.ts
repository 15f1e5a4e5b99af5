// `ingestDelivery`: the spec's processing order for a relayed delivery (and for a direct HTTP
// delivery in independent mode), steps 1-16 in order. Each step logs its outcome at debug and
// appends it to the delivery record's `steps`. The answer is the relay's ack.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { TSchema } from 'typebox';
import type { SvcConfig } from '../../../schemas/config.ts';
import { compileSchema, formatIssues, type SchemaCheck } from '../../../schemas/validate.ts';
import type { PluginHost } from '../../../core/plugins/index.ts';
import type { ProviderSource, SourceProviderExtensionPoint } from '../../../core/extension-points/provider.ts';
import type { StorageExtensionPoint } from '../../../core/extension-points/storage.ts';
import { githubEventDetails } from '../../../workflow/matching/index.ts';
import type { NamedKey } from '../../services/crypto/sealing.ts';
import { WakeupSender, type DatabasePool } from '../../services/db/index.ts';
import { messageOf } from '../../../core/errors.ts';
import type { SvcMetrics } from '../../services/metrics.ts';
import { SourceCache } from '../sources/cache.ts';
import { TrustPolicyCache } from '../trust-policy/cache.ts';
import { effectiveForkPolicy } from '../trust-policy/store.ts';
import type { PipelineServices } from './pipeline-services.ts';
import type { OpenedSource } from '../sources/store.ts';
import { Admission, type AdmissionOptions } from './steps/admission.ts';
import { parseApprovalCommand, recordApprovalCommand } from './steps/approval-commands.ts';
import { applyCommentCommand } from '../run-control/comments.ts';
import { forgeLoginResolver } from '../run-control/people.ts';
import { CacheChecker } from './steps/caches.ts';
import { changedFilesFor } from './steps/changed-files.ts';
import { countDuplicate, recordRejected, recordRetry, recordShed, type ClaimOptions } from './record/delivery-record.ts';
import { OutcomeBatcher } from './record/outcome-batch.ts';
import { dispatchRuns, type DispatchResult, type NotifyJobsQueued, type RunTarget } from './steps/create-runs.ts';
import { EventLogWriter } from './record/event-log.ts';
import { processGeneric } from './entry/generic.ts';
import { LockCache, permanentFetchFailure } from './steps/lock-fetch.ts';
import { DEFAULT_RETRY_POLICY, keepForRetry, type RetryPolicy } from './retry/store.ts';
import { matchEvent, type Candidate } from './steps/match.ts';
import { normalizeDelivery } from './steps/normalize.ts';
import { RegistrationCache, replaceRegistrations } from './steps/registrations.ts';
import { repositoryOf } from './steps/repository.ts';
import { checkRequirements } from './steps/requires.ts';
import { describeUnhonoured, unhonouredRunFeatures } from '../../../workflow/runtime-support.ts';
import { ProviderResolver } from './steps/resolve-provider.ts';
import { resolveTrust, workflowsDiffer } from './steps/trust.ts';
import { IngestStop, StepLog, stop, type DeliveryState, type IncomingDelivery, type IngestOutcome } from './types.ts';
import { verifyDeliverySignature } from './steps/verify-signature.ts';
import { IngestStages } from './stage-metrics.ts';
import { QueueDepthGuard } from './steps/queue-depth.ts';
import { crossSourceMetrics } from '../spec-metrics.ts';
import { nowMs, type TraceSpan, type Tracing } from '../../../core/tracing/index.ts';

export interface IngestDeps {
  pool: DatabasePool;
  logger: Logger;
  metrics: SvcMetrics;
  host: PluginHost;
  /** Master keys that open sealed source secrets (current first). */
  masterKeys: readonly NamedKey[];
  /** `relay`: the webhook front door's rate limits in independent mode (defaults when absent). */
  // Only the payload cap of eventLog: retention is the ingest subsystem's (record/retention.ts).
  config: Pick<SvcConfig, 'lockfileCache'> & { eventLog: Pick<SvcConfig['eventLog'], 'maxPayloadBytes'> } & Partial<Pick<SvcConfig, 'relay'>>;
  nodeId: string;
  storage?: StorageExtensionPoint;
  notifyJobsQueued: NotifyJobsQueued;
  /** `queue.maxDepth`, read per delivery (a reload applies it); absent: no limit. */
  queueMaxDepth?: () => number | undefined;
  admission?: Partial<AdmissionOptions>;
  /** TTL of opened sources (ms); changes also invalidate them at once (see sources/cache.ts). */
  sourceCacheTtlMs?: number;
  /** Event-log payload writer tuning (tests). */
  eventLog?: { concurrency?: number; maxQueuedBytes?: number; flushMs?: number };
  /** `ingestRetry`, read per failure (a reload applies it); absent: the defaults. */
  retryPolicy?: () => RetryPolicy;
  /** Sends the runs' wake-ups after their commits; default one on `pool`. */
  wakeups?: WakeupSender;
  /** Spans of each delivery and its steps (docs/tracing.md); default none. */
  tracing?: Tracing;
}

/** Delivery ids seen finished on this node (the in-memory half of dedup). */
const MEMORY_DEDUP_MAX = 50_000;

export class IngestPipeline implements PipelineServices {
  readonly deps: IngestDeps;
  readonly sources: SourceCache;
  readonly locks: LockCache;
  readonly admission: Admission;
  readonly providers: ProviderResolver;
  readonly caches: CacheChecker;
  readonly eventLog: EventLogWriter;
  readonly registrations = new RegistrationCache();
  /** Each org's trust policy (fork policy default); cleared by NOTIFY in the ingest subsystem. */
  readonly trustPolicies: TrustPolicyCache;
  readonly outcomes: OutcomeBatcher;
  readonly stages: IngestStages;
  /** Wake-ups of the runs' transactions, sent after their commits (runs/deferred-wakeups.ts). */
  readonly wakeups: WakeupSender;
  readonly queueDepth = new QueueDepthGuard();
  readonly #seen = new LRUCache<string, true>({ max: MEMORY_DEDUP_MAX, ttl: 24 * 3600_000 });
  readonly #settingsChecks = new WeakMap<TSchema, SchemaCheck<TSchema>>();
  readonly #fanout;
  readonly #crossErrors;
  readonly #outcomes;

  constructor(deps: IngestDeps) {
    this.deps = deps;
    this.sources = new SourceCache(deps.pool, deps.masterKeys, { ttlMs: deps.sourceCacheTtlMs ?? 30_000 });
    this.trustPolicies = new TrustPolicyCache(deps.pool, { ttlMs: deps.sourceCacheTtlMs ?? 30_000 });
    this.eventLog = new EventLogWriter({
      storage: deps.storage,
      pool: deps.pool,
      logger: deps.logger,
      maxPayloadBytes: deps.config.eventLog.maxPayloadBytes,
      busy: () => this.admission.inFlight > 0,
      ...deps.eventLog,
    });
    this.locks = new LockCache(deps.config.lockfileCache);
    this.admission = new Admission(deps.admission);
    this.stages = new IngestStages(deps.metrics);
    this.wakeups = deps.wakeups ?? new WakeupSender(deps.pool, deps.logger);
    this.outcomes = new OutcomeBatcher(deps.pool, { stages: this.stages });
    this.providers = new ProviderResolver(deps.host);
    this.caches = new CacheChecker(deps.storage, deps.metrics);
    const cross = crossSourceMetrics(deps.metrics);
    this.#fanout = cross.fanout;
    this.#crossErrors = cross.errors;
    this.#outcomes = deps.metrics.counter({ name: 'svc_orch_webhook_deliveries_total', help: 'Webhook deliveries by recorded status.', labelNames: ['status'] });
  }

  seenKey(orgId: string, deliveryId: string): string {
    return `${orgId}\0${deliveryId}`;
  }

  markSeen(orgId: string, deliveryId: string): void {
    this.#seen.set(this.seenKey(orgId, deliveryId), true);
  }

  seen(orgId: string, deliveryId: string): boolean {
    return this.#seen.has(this.seenKey(orgId, deliveryId));
  }

  countOutcome(status: string): void {
    this.#outcomes.inc({ status });
  }

  async ingestDelivery(delivery: IncomingDelivery): Promise<IngestOutcome> {
    // A child logger costs a bindings serialization: made only when something logs.
    const parent = this.deps.logger;
    let child: Logger | undefined;
    const loggerOf = (): Logger => (child ??= parent.child({ orgId: delivery.orgId, deliveryId: delivery.deliveryId, routingKey: delivery.routingKey }));
    const steps = new StepLog(loggerOf, parent.isLevelEnabled('debug'));
    const span = this.#traceSpan(delivery, steps);
    // Step 1: admission.
    const release = this.admission.admit();
    if (release === null) {
      const reason = `in-flight limit reached (${this.admission.inFlight} deliveries in flight)`;
      steps.add('admission', 'shed', reason);
      await recordShed(this.deps.pool, delivery, reason, steps.entries).catch((error: unknown) => loggerOf().warn({ err: error }, 'could not record a shed delivery'));
      this.countOutcome('shed');
      return { result: 'shed_retry_later', retryAfterSeconds: this.admission.retryAfterSeconds, message: reason, status: 'shed', runIds: [], deliveryId: delivery.deliveryId };
    }
    steps.add('admission', 'admitted');
    const state: DeliveryState = {
      delivery,
      steps,
      get logger() {
        return loggerOf();
      },
      trust: { tier: 'unresolved', isFork: 'unresolved' },
      workflowModified: false,
      generation: 0,
      admittedAt: performance.now(),
    };
    try {
      const outcome = delivery.providerKind === 'generic' ? await processGeneric(this, state) : await this.#process(state);
      this.countOutcome(outcome.status);
      span?.setAttributes({ 'svc.delivery.status': outcome.status, 'svc.runs.count': outcome.runIds.length });
      return outcome;
    } catch (error) {
      span?.fail(messageOf(error));
      loggerOf().error({ err: error }, 'ingest failed');
      return { result: 'shed_retry_later', retryAfterSeconds: this.admission.retryAfterSeconds, message: `ingest failed: ${messageOf(error)}`, status: 'shed', runIds: [], deliveryId: delivery.deliveryId };
    } finally {
      release();
      steps.traceRest('commit');
      span?.end();
    }
  }

  /** The delivery's ingest span, a child of the relay's forward span when the relay sent one. */
  #traceSpan(delivery: IncomingDelivery, steps: StepLog): TraceSpan | undefined {
    const tracing = this.deps.tracing;
    if (tracing === undefined || !tracing.enabled) return undefined;
    const start = nowMs();
    const span = tracing.start('orchestrator ingest', {
      kind: 'consumer',
      parent: delivery.traceparent,
      tracestate: delivery.tracestate,
      // A delivery without the relay's context (independent mode, an older relay) starts its own trace.
      root: delivery.traceparent === undefined,
      start,
      attributes: { 'svc.org.id': delivery.orgId, 'svc.delivery.id': delivery.deliveryId, 'svc.routing_key': delivery.routingKey, 'vcs.provider.name': delivery.providerKind, 'svc.delivery.replay': delivery.replay },
    });
    if (span.traceparent !== undefined) steps.trace(tracing, span, start);
    return span;
  }

  /** A refusal before processing: recorded (upgradable by a later good delivery) and answered. */
  async reject(state: DeliveryState, status: 'rejected_signature' | 'rejected_unknown_source' | 'rejected_misconfigured', message: string, sourceId: string | null): Promise<IngestOutcome> {
    state.steps.add('verify-signature', status, message);
    await recordRejected(this.deps.pool, state.delivery, status, message, state.steps.entries, sourceId);
    return { result: status, message, status, runIds: [], deliveryId: state.delivery.deliveryId };
  }

  /**
   * Step 3 for a verified delivery: the in-memory half here; the persisted half is the claim,
   * made in the same statement or transaction that finishes the record (steps 15-16), so a
   * delivery costs one commit. Null when processing goes on.
   */
  async dedup(state: DeliveryState, source: OpenedSource, windowSeconds?: number): Promise<IngestOutcome | null> {
    const { delivery } = state;
    if (windowSeconds === undefined && this.seen(delivery.orgId, delivery.deliveryId)) {
      state.steps.add('dedup', 'duplicate', 'seen on this node');
      void countDuplicate(this.deps.pool, delivery).catch(() => undefined);
      return this.duplicate(delivery, 'seen');
    }
    state.claim = { sourceId: source.id, nodeId: this.deps.nodeId, ...(windowSeconds === undefined ? {} : { windowSeconds }) };
    state.steps.add('dedup', 'new');
    return null;
  }

  duplicate(delivery: IncomingDelivery, status: string): IngestOutcome {
    if (status !== 'processing') this.markSeen(delivery.orgId, delivery.deliveryId);
    return { result: 'duplicate', status: 'duplicate', runIds: [], deliveryId: delivery.deliveryId, message: `delivery already ${status === 'processing' ? 'in progress' : 'processed'}` };
  }

  /** Steps 14-16 through dispatch; a duplicate found by the claim is answered as one. */
  async dispatch(state: DeliveryState, targets: readonly RunTarget[], status: IngestOutcome['status']): Promise<IngestOutcome> {
    const { delivery } = state;
    const result: DispatchResult = await dispatchRuns(
      {
        pool: this.deps.pool,
        caches: this.caches,
        notifyJobsQueued: this.deps.notifyJobsQueued,
        wakeups: this.wakeups,
        queueDepth: this.queueDepth,
        eventLog: this.eventLog,
        outcomes: this.outcomes,
        stages: this.stages,
        ...(this.deps.queueMaxDepth === undefined ? {} : { queueMaxDepth: this.deps.queueMaxDepth }),
      },
      state,
      targets,
      status,
      undefined,
      this.#claimOf(state),
    );
    if (result.duplicate) return this.duplicate(delivery, result.status);
    this.markSeen(delivery.orgId, delivery.deliveryId);
    return { result: 'accepted', status, runIds: result.runs.map((r) => r.runId), deliveryId: delivery.deliveryId };
  }

  #claimOf(state: DeliveryState): ClaimOptions {
    if (state.claim === undefined) throw new Error('delivery reached its record without a dedup step');
    return state.claim;
  }

  /** Runs a verified delivery to its record; stops become their status, failures a retry. */
  async finishClaimed(state: DeliveryState, body: () => Promise<IngestOutcome>): Promise<IngestOutcome> {
    const { delivery } = state;
    const claim = this.#claimOf(state);
    try {
      return await body();
    } catch (error) {
      if (error instanceof IngestStop) {
        if (error.status === 'retrying') return await this.#keep(state, claim.sourceId, error.detail);
        if (error.result === 'shed_retry_later') {
          state.steps.add('retry', 'shed', error.detail);
          await recordRetry(this.deps.pool, delivery, claim.sourceId, error.detail, state.steps.entries);
          return { result: 'shed_retry_later', retryAfterSeconds: error.retryAfterSeconds ?? this.admission.retryAfterSeconds, message: error.detail, status: 'shed', runIds: [], deliveryId: delivery.deliveryId };
        }
        const payload = this.eventLog.plan(delivery);
        state.steps.add('delivery-record', error.status, error.detail);
        const recorded = await this.outcomes.record(state, { status: error.status, message: error.detail, runIds: [], payload }, claim).catch((e: unknown) => {
          this.eventLog.cancel(payload);
          throw e;
        });
        if (!recorded.claimed) {
          this.eventLog.cancel(payload);
          return this.duplicate(delivery, recorded.status);
        }
        this.eventLog.write(delivery, payload);
        this.markSeen(delivery.orgId, delivery.deliveryId);
        return { result: error.result, message: error.detail, status: error.status, runIds: [], deliveryId: delivery.deliveryId };
      }
      // Unexpected (a database error, a provider bug): kept and retried like a passing failure.
      // Only when even that cannot be written is the sender told to come back (shed, 429).
      const reason = `failed: ${messageOf(error)}`.slice(0, 500);
      const kept = await this.#keep(state, claim.sourceId, reason).catch(() => null);
      if (kept !== null) {
        state.logger.warn({ err: error }, 'ingest failed; delivery kept for retry');
        return kept;
      }
      state.steps.add('retry', 'shed', messageOf(error));
      await recordRetry(this.deps.pool, delivery, claim.sourceId, reason, state.steps.entries).catch(() => undefined);
      throw error;
    }
  }

  /** A verified delivery that failed for a passing reason: kept with its bytes, answered accepted (retry/store.ts). */
  async #keep(state: DeliveryState, sourceId: string, reason: string): Promise<IngestOutcome> {
    const { delivery } = state;
    state.steps.add('retry', 'kept', reason);
    const policy = this.deps.retryPolicy?.() ?? DEFAULT_RETRY_POLICY;
    const kept = await keepForRetry(this.deps.pool, { delivery, sourceId, reason, steps: state.steps.entries, policy });
    const status = kept.state === 'failed' ? 'failed' : 'retrying';
    if (status === 'failed') state.logger.error({ attempts: kept.attempts, reason }, 'delivery given up after retries');
    return { result: 'accepted', status, message: kept.message, runIds: [], deliveryId: delivery.deliveryId };
  }

  settingsProblem(provider: SourceProviderExtensionPoint | undefined, source: OpenedSource): string | null {
    const schema = provider?.sourceSettingsSchema;
    if (schema === undefined) return null;
    let check = this.#settingsChecks.get(schema);
    if (check === undefined) {
      check = compileSchema(schema);
      this.#settingsChecks.set(schema, check);
    }
    const result = check.validate(source.settings);
    return result.ok ? null : `source ${source.id} settings do not fit provider ${provider!.providerKind}: ${formatIssues(result.issues)}`;
  }

  async #process(state: DeliveryState): Promise<IngestOutcome> {
    const { delivery, steps } = state;
    // Step 2: source and signature.
    let lookup = await this.sources.get(delivery.orgId, delivery.routingKey);
    if (!lookup.ok && lookup.reason === 'unknown') return this.reject(state, 'rejected_unknown_source', `no source with routing key ${delivery.routingKey} in org ${delivery.orgId}`, null);
    if (!lookup.ok) return this.reject(state, 'rejected_misconfigured', lookup.reason === 'misconfigured' ? lookup.message : 'misconfigured', null);
    const provider = this.providers.resolve(delivery.routingKey);
    if (!verifyDeliverySignature(delivery, lookup.source, provider) && lookup.cached) {
      lookup = await this.sources.get(delivery.orgId, delivery.routingKey, { fresh: true });
      if (!lookup.ok) return this.reject(state, lookup.reason === 'unknown' ? 'rejected_unknown_source' : 'rejected_misconfigured', lookup.reason === 'misconfigured' ? lookup.message : 'source removed', null);
    }
    const source = lookup.source;
    if (!verifyDeliverySignature(delivery, source, provider)) {
      return this.reject(state, 'rejected_signature', `signature does not match the secret${source.secrets.length > 1 ? 's' : ''} of source ${source.id}`, source.id);
    }
    const settingsProblem = this.settingsProblem(provider, source);
    if (settingsProblem !== null) return this.reject(state, 'rejected_misconfigured', settingsProblem, source.id);
    steps.add('verify-signature', 'verified', source.rotating ? 'rotation under way: two secrets accepted' : undefined);
    state.source = source;

    // Step 3: dedup.
    const duplicate = await this.dedup(state, source);
    if (duplicate !== null) return duplicate;
    return this.finishClaimed(state, () => this.#claimed(state, source, provider));
  }

  async #claimed(state: DeliveryState, source: OpenedSource, provider: SourceProviderExtensionPoint | undefined): Promise<IngestOutcome> {
    const { delivery, steps } = state;
    const { pool } = this.deps;
    // Step 4: provider.
    if (provider === undefined) stop('skipped', `no provider serves routing key ${delivery.routingKey} (signed in: ${this.providers.kinds().join(', ') || 'none'})`);
    steps.add('resolve-provider', 'resolved', provider.providerKind);
    state.provider = provider;

    // Step 5: normalize.
    const normalized = normalizeDelivery(provider, delivery);
    if (!normalized.ok) stop('skipped', normalized.reason);
    const event = normalized.event;
    state.event = event;
    state.payload = normalized.payload;
    steps.add('normalize', 'normalized', `${event.eventName}${event.branch ? ` on ${event.branch}` : ''}${event.sha ? ` at ${event.sha}` : ''}`);

    // Step 6: repository.
    const repository = repositoryOf(event);
    if (repository === null) stop('no_match', 'the event names no repository');
    state.repository = repository;
    const providerSource: ProviderSource = { id: source.id, orgId: source.orgId, routingKey: source.routingKey, settings: source.settings, credentials: source.credentials };
    steps.add('repository', 'resolved', repository.fullName);

    // Step 7: approval commands.
    const command = parseApprovalCommand(event);
    if (command !== null) {
      const recorded = await recordApprovalCommand(pool, delivery.orgId, delivery.deliveryId, source.id, event, command, normalized.payload);
      // Team and role clauses: the author's person through the provider's login link (people directory).
      const outcome = recorded.fresh ? await applyCommentCommand(pool, recorded.command, forgeLoginResolver(pool, provider.providerKind)) : 'already processed (a redelivery of the same comment)';
      stop('approval_command', `/svc ${command.command} by ${recorded.command.author}: ${outcome}`);
    }
    steps.add('approval-commands', 'none');

    // Step 8: trust.
    const trust = resolveTrust(event);
    state.trust = { tier: trust.tier, isFork: trust.isFork };
    if (trust.isFork === 'true') {
      // The source's own fork policy, else its org's trust policy, else run (docs/trust-policy.md).
      const orgPolicy = source.forkPolicy === null ? (await this.trustPolicies.get(source.orgId)).forkPolicy : null;
      if (effectiveForkPolicy(source.forkPolicy, orgPolicy) === 'ignore') {
        const whose = source.forkPolicy === null ? `org ${source.orgId}'s trust policy` : "the source's";
        stop('ignored_fork', `pull request from fork ${event.pullRequest?.headRepository ?? ''} and ${whose} fork policy is ignore`);
      }
    }
    steps.add('trust', trust.tier, trust.compareHeadSha ? `lock read from base ${trust.lockSha}` : undefined);

    // Step 9: lock.
    let lock = null;
    if (trust.lockSha !== null) {
      let read;
      try {
        // The pushed ref, when the lock is read at the pushed commit: a provider may fetch only it.
        const pushedRef = event.type === 'push' && event.sha === trust.lockSha ? event.ref : null;
        read = await this.locks.fetch(provider, providerSource, repository, trust.lockSha, pushedRef);
      } catch (error) {
        // A commit the forge does not have, or a lock over the size limit, stays so: recorded
        // failed and answered accepted. Anything else (unreachable, 5xx, rate limit) can pass.
        const why = `lock file could not be fetched: ${messageOf(error)}`;
        if (permanentFetchFailure(error)) stop('failed', why);
        stop('retrying', why);
      }
      if (read.kind === 'corrupt') stop('lockfile_corrupt', read.message);
      if (read.kind === 'lock') {
        lock = read.lock;
        state.lock = lock;
        state.lockSha = trust.lockSha;
        if (trust.compareHeadSha !== null) {
          const head = await this.locks.fetch(provider, providerSource, repository, trust.compareHeadSha).catch((error: unknown) => ({ kind: 'error' as const, message: messageOf(error) }));
          state.workflowModified = head.kind !== 'lock' || workflowsDiffer(lock, head.lock);
        }
      }
    }
    steps.add('lock-fetch', lock === null ? 'none' : 'found', lock === null ? (trust.lockSha === null ? 'the event names no commit' : `no lock file at ${trust.lockSha}`) : `${lock.workflows.length} workflow(s)${state.workflowModified ? ', head modifies workflows' : ''}`);

    // Step 10: registrations on a default-branch push.
    const defaultBranch = event.repository?.defaultBranch;
    if (event.type === 'push' && !event.deleted && defaultBranch && event.branch === defaultBranch && event.sha !== null) {
      const count = await pool.transaction((tx) =>
        replaceRegistrations(tx, {
          orgId: delivery.orgId,
          sourceId: source.id,
          repository: repository.fullName,
          repositoryId: event.repository?.id ?? null,
          cloneUrl: repository.cloneUrl ?? null,
          branch: defaultBranch,
          sha: event.sha!,
          lock: lock ?? { schemaVersion: 1, source: '', contentHash: '', workflows: [] },
          deliveryKey: delivery.deliveryId,
        }),
      );
      if (count === undefined) steps.add('registrations', 'unchanged', 'already replaced by an earlier attempt of this delivery');
      else {
        this.registrations.clear();
        steps.add('registrations', 'replaced', `${count} registration(s) for ${repository.fullName}; registration.updated emitted`);
      }
    } else steps.add('registrations', 'unchanged');

    // Step 11: changed files.
    if (lock !== null) {
      const changed = await changedFilesFor(provider, providerSource, repository, event, lock);
      if (changed.needed && 'files' in changed) state.changedFiles = changed.files;
      if (changed.needed && 'unavailable' in changed) state.changedFilesUnavailable = changed.unavailable;
      steps.add('changed-files', changed.needed ? ('files' in changed ? 'fetched' : 'unavailable') : 'not_needed', changed.needed ? ('files' in changed ? `${changed.files.length} file(s)` : changed.unavailable) : undefined);
    } else steps.add('changed-files', 'not_needed');

    // Step 12: match.
    const summary = await matchEvent({
      pool,
      orgId: delivery.orgId,
      event,
      lock,
      lockSha: state.lockSha ?? null,
      repository: repository.fullName,
      sourceId: source.id,
      cloneUrl: repository.cloneUrl ?? null,
      eventSource: source,
      registrations: this.registrations,
      orgSources: (orgId) => this.sources.listOrg(orgId),
      ...(state.changedFiles !== undefined ? { changedFiles: state.changedFiles } : {}),
      ...(state.changedFilesUnavailable !== undefined ? { changedFilesUnavailable: state.changedFilesUnavailable } : {}),
      details: githubEventDetails(event.providerEvent, normalized.payload),
    });
    this.#fanout.observe({ event: event.type ?? 'none' }, summary.orgWideCount);
    steps.add('match', summary.candidates.length > 0 ? 'matched' : 'no_match',
      [...summary.candidates.map((c) => `${c.workflow.name}${c.orgWide ? ` (org-wide from ${c.workflowRepository})` : ''}`), ...summary.unmatched.map((u) => `${u.workflow}: ${u.verdict}, ${u.reason}`)].join('; ') || undefined);

    // Step 13: requirements (and organization-wide credentials).
    const kept: Candidate[] = [];
    for (const candidate of summary.candidates) {
      const unhonoured = unhonouredRunFeatures(candidate.workflow, candidate.lockfileHash);
      if (unhonoured.length > 0) {
        // A lock compiled by an svc that allowed these: running it would silently ignore them.
        steps.add('requires', 'dropped', `${candidate.workflow.name}: not run: ${describeUnhonoured(unhonoured)}`);
        state.logger.warn({ workflow: candidate.workflow.name, unhonoured }, 'matched workflow not run: it uses features this version does not carry out');
        continue;
      }
      const result = await checkRequirements(candidate.requires, provider, providerSource, repository, event.sha);
      if (!result.ok) {
        steps.add('requires', 'dropped', `${candidate.workflow.name}: ${result.reason}`);
        state.logger.info({ workflow: candidate.workflow.name, reason: result.reason }, 'candidate dropped by requirements');
        continue;
      }
      if (candidate.orgWide && !(await this.#workflowAuthWorks(state, candidate))) continue;
      kept.push(candidate);
    }
    if (summary.candidates.some((c) => c.requires.length > 0)) steps.add('requires', 'evaluated', `${kept.length} of ${summary.candidates.length} kept`);
    else steps.add('requires', 'none');

    const pr = event.pullRequest;
    const targets: RunTarget[] = kept.map((candidate) => ({
      candidate,
      deliveryKey: delivery.deliveryId,
      sourceId: source.id,
      provider: source.providerKind,
      repository: repository.fullName,
      sha: event.sha ?? pr?.headSha ?? state.lockSha ?? '',
      ref: pr !== null ? `refs/heads/${pr.baseRef}` : event.ref,
    }));
    const status = targets.length > 0 ? 'matched' : lock === null ? 'no_lock_file' : 'no_match';
    return this.dispatch(state, targets, status);
  }

  /** An organization-wide run needs credentials for the workflow's repository too (`workflowAuth`). */
  async #workflowAuthWorks(state: DeliveryState, candidate: Candidate): Promise<boolean> {
    const registration = candidate.registration;
    if (registration === undefined) return true;
    try {
      const row = await this.sources.getById(registration.sourceId);
      const provider = row === null ? undefined : this.providers.resolve(row.routingKey);
      if (row === null || provider === undefined) throw new Error(`source ${registration.sourceId} of ${registration.repository} has no provider`);
      await provider.checkoutCredentials({
        source: { id: row.id, orgId: row.orgId, routingKey: row.routingKey, settings: row.settings, credentials: row.credentials },
        repository: { id: registration.repositoryId ?? registration.repository, fullName: registration.repository, ...(registration.cloneUrl ? { cloneUrl: registration.cloneUrl } : {}) },
      });
      return true;
    } catch (error) {
      this.#crossErrors.inc({ reason: 'clone_token' });
      state.steps.add('requires', 'dropped', `${candidate.workflow.name}: no credentials for workflow repository ${registration.repository}: ${messageOf(error)}`);
      return false;
    }
  }
}

export function createIngest(deps: IngestDeps): IngestPipeline {
  return new IngestPipeline(deps);
}
