// The run-control worker of one node: ends expired holds, admits runs into their concurrency
// groups, and passes ready jobs through their gates. Woken by NOTIFY (run control, and the
// status feed: a job or run that finishes frees a slot) and by a bounded periodic tick that also
// releases wait timers; passes never overlap. Every node runs one; they share the work through
// row locks and per-group advisory locks, so running it twice is safe.
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import { messageOf } from '../../../core/errors.ts';
import { sql, type DatabasePool } from '../../services/db/index.ts';
import { cancelJobIn } from '../dispatch/cancel.ts';
import { expireHolds } from './approvals.ts';
import { admitWaitingRuns } from './concurrency.ts';
import { passJobGates } from './gates.ts';

/** Ready jobs looked at per pass. */
const GATE_BATCH = 500;

export interface RunControlWorkerOptions {
  pool: DatabasePool;
  logger: Logger;
  /** Periodic pass (wait timers, hold expiry, missed notifications). */
  tickMs: number;
  /** Counts completed passes (`svc_orch_run_control_passes_total`). */
  passes?: Counter;
}

export interface PassResult {
  expired: number;
  admitted: number;
  cancelledRuns: number;
  queued: number;
  held: number;
}

/** One whole pass; exported for tests that drive the worker step by step. */
export async function runControlPass(pool: DatabasePool, logger: Logger): Promise<PassResult> {
  const result: PassResult = { expired: 0, admitted: 0, cancelledRuns: 0, queued: 0, held: 0 };
  result.expired = await expireHolds(pool);
  const admission = await admitWaitingRuns(pool);
  result.admitted = admission.admitted.length;
  result.cancelledRuns = admission.cancelled.length;
  const ready = (await pool.anyFirst(sql.unsafe`
    SELECT id::text FROM jobs WHERE status = 'waiting' AND ready_at IS NOT NULL ORDER BY ready_at, id LIMIT ${GATE_BATCH}`)) as readonly string[];
  for (const jobId of ready) {
    try {
      const outcome = await pool.transaction((tx) => passJobGates(tx, jobId));
      if (outcome.kind === 'queued') result.queued += 1;
      else if (outcome.kind === 'held') result.held += 1;
      else if (outcome.kind === 'cancel-older') {
        // Outside the gate's transaction: each cancel takes its own run's lock.
        for (const older of outcome.jobIds) await cancelJobIn(pool, older, 'svc:concurrency', { reason: outcome.reason });
      }
    } catch (error) {
      logger.warn({ err: messageOf(error), jobId }, 'run-control gate pass failed for a job; retrying on the next pass');
    }
  }
  return result;
}

export class RunControlWorker {
  readonly #o: RunControlWorkerOptions;
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: RunControlWorkerOptions) {
    this.#o = options;
  }

  start(): void {
    this.#timer = setInterval(() => this.wake(), this.#o.tickMs);
    this.#timer.unref();
    this.wake();
  }

  wake(): void {
    if (this.#stopped) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          const r = await runControlPass(this.#o.pool, this.#o.logger);
          this.#o.passes?.inc();
          if (r.expired + r.admitted + r.cancelledRuns + r.queued + r.held > 0) this.#o.logger.debug(r, 'run-control pass');
        } catch (error) {
          this.#o.logger.warn({ err: messageOf(error) }, 'run-control pass failed; retrying on the next wake');
        }
      } while (this.#again && !this.#stopped);
    })().finally(() => {
      this.#running = undefined;
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#running;
  }
}
