// A job that ends before or outside the step runner: the message becomes `job.status.reason`
// verbatim, so it must say what happened and what to do.
import { SvcError, type ErrorCode } from '../../core/errors.ts';

export class JobFailure extends SvcError {
  /** `failed` for errors; `cancelled` when a cancel stopped the set-up. */
  readonly status: 'failed' | 'cancelled';
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; status?: 'failed' | 'cancelled' } = {}) {
    super(code, message, options.cause === undefined ? {} : { cause: options.cause });
    this.status = options.status ?? 'failed';
  }
}

export function cancelledFailure(reason: string): JobFailure {
  return new JobFailure('SVC_ERR_AGENT_JOB_CANCELLED', reason === '' ? 'cancelled' : `cancelled: ${reason}`, { status: 'cancelled' });
}
