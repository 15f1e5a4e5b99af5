-- The exit code of the command that failed a job's step (wire protocol 5: `exitCode` on
-- `job.status` and `step.status`, docs/agent.md). A job retry policy's `exitCodes` reads the job's
-- (kernel/orchestrator/dispatch/retry.ts); each attempt keeps its own. Null when the failure had
-- none (a timeout, cancel, signal or thrown error), the job did not fail, or an agent below
-- protocol 5 ran it.
ALTER TABLE jobs ADD COLUMN exit_code integer CHECK (exit_code > 0);
ALTER TABLE job_steps ADD COLUMN exit_code integer CHECK (exit_code > 0);
