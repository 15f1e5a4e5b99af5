// Where a delivery's time goes inside the ingest pipeline, one histogram split by stage, so a
// slow `receive_to_commit` hop (relay-link/connect.ts) names its cause: the steps themselves
// (CPU, caches, matching), waiting for a pooled connection, the transaction's statements, the
// COMMIT (a WAL flush; with NOTIFY also PostgreSQL's one lock that orders notifying commits), the
// one statement that records a new delivery with its one run (ingest/steps/one-statement-run.ts:
// pool checkout, statement and commit together; `one_statement_aborted` when something it would
// insert existed, and the transaction follows), or, for records without runs, waiting for and writing the batched statement. A few clock reads per
// delivery; nothing is labelled per delivery.
import type { Histogram } from 'prom-client';
import type { SvcMetrics } from '../../services/metrics.ts';

export type IngestStage = 'steps' | 'connection' | 'statements' | 'commit' | 'one_statement' | 'one_statement_aborted' | 'batch_wait' | 'batch_write';

/** Same buckets as the hop histograms: fine where the budget is (p99 ≤ 25 ms end to end). */
export const STAGE_BUCKETS = [0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.035, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5];

export class IngestStages {
  readonly #histogram: Histogram<'stage'> | undefined;

  constructor(metrics?: SvcMetrics) {
    this.#histogram = metrics?.histogram({
      name: 'svc_orch_ingest_stage_seconds',
      help: 'Stages of a delivery in the ingest pipeline: steps (admitted to its record write), connection (pool checkout and BEGIN), statements, commit, one_statement (a new delivery and its one run in one statement: checkout, statement, commit), one_statement_aborted (that statement found its record or run there already; the transaction follows), batch_wait and batch_write (records without runs).',
      labelNames: ['stage'],
      buckets: STAGE_BUCKETS,
    });
  }

  /** `from` and `to` are `performance.now()` readings. */
  observe(stage: IngestStage, from: number, to: number = performance.now()): void {
    this.#histogram?.observe({ stage }, Math.max(0, to - from) / 1000);
  }
}
