// What a run status means to a forge: waiting (`queued`), running (`in_progress`) or finished
// (`completed`) with a conclusion. Run statuses are open-ended (new ones such as `timed_out` may
// be added): a status this table does not know is finished when the run has a finish time
// (conclusion `neutral`, or the closest one its name suggests), else still in progress.
import type { RunReportConclusion, RunReportState } from '../../../core/extension-points/provider.ts';

export interface ReportedState {
  state: RunReportState;
  conclusion: RunReportConclusion | null;
}

const WAITING = new Set(['held', 'queued', 'waiting', 'pending', 'requested']);
const RUNNING = new Set(['running', 'in_progress', 'dispatched', 'recovering']);
const FINISHED: Readonly<Record<string, RunReportConclusion>> = {
  completed: 'success',
  succeeded: 'success',
  success: 'success',
  failed: 'failure',
  failure: 'failure',
  errored: 'failure',
  error: 'failure',
  cancelled: 'cancelled',
  canceled: 'cancelled',
  rejected: 'cancelled',
  skipped: 'skipped',
  timed_out: 'timed_out',
  timeout: 'timed_out',
};

/** The forge state of a run `status`; `finished` says whether the run has a finish time. */
export function reportedState(status: string, finished: boolean): ReportedState {
  const s = status.toLowerCase();
  if (WAITING.has(s)) return { state: 'queued', conclusion: null };
  if (RUNNING.has(s)) return { state: 'in_progress', conclusion: null };
  const known = FINISHED[s];
  if (known !== undefined) return { state: 'completed', conclusion: known };
  if (!finished) return { state: 'in_progress', conclusion: null };
  if (/time|deadline/.test(s)) return { state: 'completed', conclusion: 'timed_out' };
  if (/fail|error/.test(s)) return { state: 'completed', conclusion: 'failure' };
  if (/cancel|abort/.test(s)) return { state: 'completed', conclusion: 'cancelled' };
  return { state: 'completed', conclusion: 'neutral' };
}

/** Words for a title: `passed`, `failed`, `waiting for approval`, … */
export function describeState(status: string, reported: ReportedState): string {
  if (status === 'held') return 'waiting for approval';
  if (reported.state === 'queued') return 'queued';
  if (reported.state === 'in_progress') return 'running';
  switch (reported.conclusion) {
    case 'success':
      return 'passed';
    case 'failure':
      return 'failed';
    case 'cancelled':
      return 'cancelled';
    case 'skipped':
      return 'skipped';
    case 'timed_out':
      return 'timed out';
    default:
      return `finished (${status})`;
  }
}
