// The one state machine of runs and jobs (docs/run-states.md). Every status a run or a job can
// have and every move between them is listed here; the database enforces the same table with a
// trigger (migration 0610_status_transitions.sql seeds it, and a test keeps the two identical),
// so a code path that tries an illegal move fails its transaction instead of corrupting a run.
//
// `new` stands for the row's insert: the statuses a run or job may be created in.

export const RUN_STATUSES = ['held', 'queued', 'running', 'completed', 'failed', 'cancelled', 'skipped'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

export const JOB_STATUSES = ['waiting', 'held', 'queued', 'dispatched', 'running', 'recovering', 'completed', 'failed', 'cancelled', 'skipped'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const TERMINAL_RUN_STATUSES: ReadonlySet<string> = new Set<RunStatus>(['completed', 'failed', 'cancelled', 'skipped']);
export const TERMINAL_JOB_STATUS_SET: ReadonlySet<string> = new Set<JobStatus>(['completed', 'failed', 'cancelled', 'skipped']);

type Table<S extends string> = Readonly<Record<S | 'new', readonly S[]>>;

/**
 * Runs. `held`: an approval gate holds the whole run (approved → queued; rejected, expired or
 * cancelled → cancelled; the build it waited for failed → failed). `queued`: not one job
 * dispatched yet. A terminal status never changes: a re-run is a new run.
 */
export const RUN_TRANSITIONS: Table<RunStatus> = {
  new: ['held', 'queued'],
  held: ['queued', 'cancelled', 'failed'],
  queued: ['running', 'completed', 'failed', 'cancelled', 'skipped'],
  running: ['completed', 'failed', 'cancelled', 'skipped'],
  completed: [],
  failed: [],
  cancelled: [],
  skipped: [],
};

/**
 * Jobs. `waiting`: needs, a build, or a gate (wait timer, concurrency slot) not met yet. `held`:
 * an approval (job gate or a context's required reviewers) is pending. `recovering`: its agent's
 * connection dropped and it may come back. A generated job that cannot run is created `failed`;
 * a job a restart from failed jobs reuses from the parent run is created `completed`.
 */
export const JOB_TRANSITIONS: Table<JobStatus> = {
  new: ['waiting', 'queued', 'completed', 'failed'],
  waiting: ['held', 'queued', 'skipped', 'cancelled'],
  held: ['waiting', 'queued', 'cancelled'],
  queued: ['dispatched', 'failed', 'cancelled'],
  dispatched: ['queued', 'running', 'recovering', 'completed', 'failed', 'cancelled', 'skipped'],
  running: ['recovering', 'completed', 'failed', 'cancelled', 'skipped'],
  recovering: ['dispatched', 'running', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
  skipped: [],
};

export type StatusEntity = 'runs' | 'jobs';

/** True when `entity` may move from `from` (`new` for an insert) to `to`. */
export function canTransition(entity: StatusEntity, from: string, to: string): boolean {
  const table: Readonly<Record<string, readonly string[]>> = entity === 'runs' ? RUN_TRANSITIONS : JOB_TRANSITIONS;
  return table[from]?.includes(to) === true;
}

/** Every allowed move as rows, the form migration 0610 seeds into `status_transitions`. */
export function transitionRows(): Array<{ entity: StatusEntity; from: string; to: string }> {
  const rows: Array<{ entity: StatusEntity; from: string; to: string }> = [];
  for (const [entity, table] of [['runs', RUN_TRANSITIONS], ['jobs', JOB_TRANSITIONS]] as const) {
    for (const [from, targets] of Object.entries(table)) for (const to of targets) rows.push({ entity, from, to });
  }
  return rows;
}
