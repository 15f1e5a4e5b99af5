// Stored log lines of one run for `svc-admin runs logs`, narrowed to a job and a step. Lines are
// stored per job as chunks (`job_logs`, already masked by the agent) and tagged with the name of
// the step that printed them; a step is picked by its index in `job_steps` (a negative index
// counts from the end: -1 is the last step) and its lines are those tagged with its name. Two
// steps of one job with the same name share their lines: the log does not tell them apart.
import { Type } from 'typebox';
import { InputError, NotFoundError } from '../../../core/errors.ts';
import { sqlTyped, type DatabasePool } from '../../services/db/index.ts';
import type { RunLogLine } from '../../../schemas/wire/relay.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Chunks read per query: bounds one result set, not the whole log. */
const CHUNKS_PER_QUERY = 200;

export interface LogStep {
  index: number;
  name: string;
  status: string;
}

export interface RunLogs {
  runId: string;
  status: string;
  /** The job asked for (`--job`), or the run's only job when a step was asked for. */
  job: { id: string; name: string; displayName: string } | null;
  step: LogStep | null;
  lines: RunLogLine[];
}

export interface RunLogsQuery {
  /** Job id, display name or name. */
  job?: string;
  /** Step index; negative counts from the end. */
  step?: number;
}

const JobRow = Type.Object({ id: Type.String(), name: Type.String(), display_name: Type.String() });
type JobRow = { id: string; name: string; display_name: string };
const StepRow = Type.Object({ index: Type.Number(), name: Type.String(), status: Type.String() });
const ChunkRow = Type.Object({ seq: Type.Number(), lines: Type.Unknown() });

function pickJob(jobs: readonly JobRow[], wanted: string, runId: string): JobRow {
  const byId = jobs.find((j) => j.id === wanted.toLowerCase());
  if (byId) return byId;
  const byDisplay = jobs.filter((j) => j.display_name === wanted);
  const matches = byDisplay.length > 0 ? byDisplay : jobs.filter((j) => j.name === wanted);
  if (matches.length === 1) return matches[0]!;
  const names = jobs.map((j) => j.display_name).join(', ') || '(none)';
  if (matches.length === 0) throw new NotFoundError('SVC_ERR_RUNS_JOB_NOT_FOUND', `run ${runId} has no job "${wanted}"; its jobs: ${names}`);
  throw new InputError('SVC_ERR_RUNS_JOB_AMBIGUOUS', `"${wanted}" names ${matches.length} jobs of run ${runId} (${matches.map((j) => `${j.display_name} ${j.id}`).join('; ')}); pass --job with one display name or id`);
}

/** Step `index` of `steps` (ordered by index); negative counts from the end. */
export function pickStep(steps: readonly LogStep[], index: number, job: string): LogStep {
  const at = index < 0 ? steps.length + index : steps.findIndex((s) => s.index === index);
  const step = at >= 0 ? steps[at] : undefined;
  if (step === undefined) {
    const range = steps.length === 0 ? 'it has no recorded steps (it did not start, or printed nothing yet)' : `its steps are 0..${steps.length - 1} (or -1..-${steps.length} from the end)`;
    throw new NotFoundError('SVC_ERR_RUNS_STEP_NOT_FOUND', `job ${job} has no step ${index}: ${range}`);
  }
  return step;
}

async function linesOf(pool: DatabasePool, job: JobRow, stepName: string | undefined, out: RunLogLine[]): Promise<void> {
  for (let from = 0; ; ) {
    const rows = await pool.any(sqlTyped(ChunkRow)`
      select seq, lines from job_logs where job_id = ${job.id} and seq >= ${from} order by seq limit ${CHUNKS_PER_QUERY}`);
    for (const row of rows) {
      for (const l of Array.isArray(row.lines) ? (row.lines as Array<Record<string, unknown>>) : []) {
        const step = typeof l['step'] === 'string' ? l['step'] : '';
        if (stepName !== undefined && step !== stepName) continue;
        out.push({
          jobId: job.id,
          job: job.display_name,
          seq: row.seq,
          at: typeof l['at'] === 'string' ? l['at'] : '',
          step,
          stream: typeof l['stream'] === 'string' ? l['stream'] : 'stdout',
          text: typeof l['text'] === 'string' ? l['text'] : '',
        });
      }
    }
    if (rows.length < CHUNKS_PER_QUERY) return;
    from = rows[rows.length - 1]!.seq + 1;
  }
}

export async function readRunLogs(pool: DatabasePool, runId: string, query: RunLogsQuery = {}): Promise<RunLogs> {
  const notFound = () => new NotFoundError('SVC_ERR_RUN_NOT_FOUND', `no run ${runId}; list runs with "svc-admin runs list"`);
  if (!UUID.test(runId)) throw notFound();
  const run = await pool.maybeOne(sqlTyped(Type.Object({ id: Type.String(), status: Type.String() }))`select id::text as id, status from runs where id = ${runId}`);
  if (run === null) throw notFound();
  const jobs = [...(await pool.any(sqlTyped(JobRow)`select id::text as id, name, display_name from jobs where run_id = ${run.id} order by created_at, display_name, id`))];
  let selected: JobRow[] = jobs;
  if (query.job !== undefined) selected = [pickJob(jobs, query.job, run.id)];
  else if (query.step !== undefined && jobs.length !== 1) {
    throw new InputError('SVC_ERR_RUNS_JOB_REQUIRED', `run ${run.id} has ${jobs.length} jobs: name one with --job (${jobs.map((j) => j.display_name).join(', ') || 'none'}) to pick a step`);
  }
  let step: LogStep | null = null;
  if (query.step !== undefined) {
    const job = selected[0]!;
    const steps = await pool.any(sqlTyped(StepRow)`select index, name, status from job_steps where job_id = ${job.id} order by index`);
    step = pickStep(steps, query.step, job.display_name);
  }
  const lines: RunLogLine[] = [];
  for (const job of selected) await linesOf(pool, job, step?.name, lines);
  const one = selected.length === 1 && (query.job !== undefined || query.step !== undefined) ? selected[0]! : null;
  return { runId: run.id, status: run.status, job: one === null ? null : { id: one.id, name: one.name, displayName: one.display_name }, step, lines };
}

