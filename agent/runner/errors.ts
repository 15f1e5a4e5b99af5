// Stable codes of what the step runner refuses or reports. Workflow code sees these as thrown
// errors; the agent sees their messages in step and job reasons.
import { SvcError } from '../../core/errors.ts';

export const RunnerErrorCode = {
  workflowLoad: 'SVC_ERR_RUNNER_WORKFLOW_LOAD',
  jobNotFound: 'SVC_ERR_RUNNER_JOB_NOT_FOUND',
  dynamicJob: 'SVC_ERR_RUNNER_DYNAMIC_JOB',
  outputs: 'SVC_ERR_RUNNER_OUTPUTS_INVALID',
  jobOutputs: 'SVC_ERR_RUNNER_JOB_OUTPUTS_INVALID',
  ruleResult: 'SVC_ERR_RUNNER_RULE_RESULT',
  checkResult: 'SVC_ERR_RUNNER_CHECK_RESULT',
  apiArgs: 'SVC_ERR_RUNNER_API_ARGS',
  apiResult: 'SVC_ERR_RUNNER_API_RESULT',
  apiUnsupported: 'SVC_ERR_RUNNER_API_UNSUPPORTED',
  cancelled: 'SVC_ERR_RUNNER_CANCELLED',
  notInStep: 'SVC_ERR_RUNNER_NOT_IN_STEP',
  generator: 'SVC_ERR_RUNNER_GENERATOR',
} as const;

/** An `api.request` the agent answered with an error; `code` is the agent's. */
export class RunnerApiError extends SvcError {}
