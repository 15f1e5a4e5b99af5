// The orchestrator side of a local run, in process: it receives what an agent sends (job and
// step statuses, masked log chunks) and answers the agent's requests. There is no orchestrator
// and no database: identity tokens and caches are refused with a clear error, and `ctx.emit`
// is recorded (and reported by the caller) instead of delivered.
import type { Static } from 'typebox';
import { UnavailableError } from '../../../core/errors.ts';
import type { AgentToOrchestrator, JobStatus, LogChunk, OrchestratorToAgent, StepStatus, TestCase } from '../../../schemas/wire/agent.ts';

export const LOCAL_UNAVAILABLE = 'SVC_ERR_LOCAL_RUN_UNAVAILABLE';

export interface EmittedEvent {
  jobId: string;
  eventName: string;
  payload: unknown;
  target?: string;
  deliveryId: string;
}

export interface LocalHubListener {
  onLog?(jobId: string, lines: Static<typeof LogChunk>['lines']): void;
  onStep?(message: Static<typeof StepStatus>): void;
  onStatus?(message: JobStatus): void;
  onEmit?(event: EmittedEvent): void;
}

const WHAT: Record<string, string> = {
  'oidc.token.request': 'ctx.svc.oidc.token (identity tokens)',
  'cache.user.restore.request': 'ctx.cache.restore',
  'cache.user.save.request': 'ctx.cache.save',
  'cache.upload.request': 'build cache uploads',
  'attestation.create.request': 'ctx.attestProvenance (provenance signing)',
};

/** A test case a local job reported (docs/test-results.md): kept for the run's summary. */
export interface LocalTestResult {
  jobId: string;
  step: string;
  test: TestCase;
}

export class LocalHub {
  readonly emitted: EmittedEvent[] = [];
  readonly tests: LocalTestResult[] = [];
  readonly #listener: LocalHubListener;
  /** The last job.status per job (the terminal one once the job ends). */
  readonly #statuses = new Map<string, JobStatus>();

  constructor(listener: LocalHubListener = {}) {
    this.#listener = listener;
  }

  statusOf(jobId: string): JobStatus | undefined {
    return this.#statuses.get(jobId);
  }

  /** The agent's `send`. */
  readonly send = (message: AgentToOrchestrator): void => {
    switch (message.type) {
      case 'job.status':
        this.#statuses.set(message.jobId, message);
        this.#listener.onStatus?.(message);
        return;
      case 'step.status':
        this.#listener.onStep?.(message);
        return;
      case 'log.chunk':
        this.#listener.onLog?.(message.jobId, message.lines);
        return;
      default:
        // job.context, cache completes: nothing to keep in a local run.
        return;
    }
  };

  /** The agent's `request`: the answer, or a refusal for APIs that need an orchestrator. */
  readonly request = async (message: AgentToOrchestrator & { requestId: string }): Promise<OrchestratorToAgent> => {
    if (message.type === 'event.emit') {
      const event: EmittedEvent = {
        jobId: message.jobId,
        eventName: message.eventName,
        payload: message.payload,
        ...(message.target === undefined ? {} : { target: message.target }),
        deliveryId: `local-${this.emitted.length + 1}`,
      };
      this.emitted.push(event);
      this.#listener.onEmit?.(event);
      return { type: 'event.emit.response', requestId: message.requestId, deliveryId: event.deliveryId };
    }
    if (message.type === 'tests.report.request') {
      // No orchestrator, so no quarantine: a failing test fails its step as its command did.
      for (const test of message.results) this.tests.push({ jobId: message.jobId, step: message.step.name, test });
      if (!message.final) return { type: 'tests.report.response', requestId: message.requestId };
      const failed = this.tests.filter((t) => t.jobId === message.jobId && t.step === message.step.name && (t.test.status === 'failed' || t.test.status === 'errored')).length;
      return { type: 'tests.report.response', requestId: message.requestId, failed, quarantinedFailed: 0, waived: false };
    }
    const what = WHAT[message.type] ?? message.type;
    throw new UnavailableError(LOCAL_UNAVAILABLE, `${what} is not available in a local run (there is no orchestrator); run it remotely (\`svc run remote\`) or guard the step with ctx.isTestRun`);
  };
}
