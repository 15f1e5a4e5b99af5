-- A job's set-up phases on its agent (source restore, checkout and its parts, dependencies), as
-- the agent reports them on `job.status` from protocol 5 (schemas/wire/agent.ts JobPhase): the
-- dashboard's timeline (docs/dashboard.md "Timeline"). One row per phase name and job; a resumed
-- job that sets up again replaces its phases. An older agent reports none: the timeline shows
-- the job without them.
CREATE TABLE job_phases (
  job_id      uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  name        text NOT NULL,
  started_at  timestamptz NOT NULL,
  finished_at timestamptz NOT NULL,
  PRIMARY KEY (job_id, name),
  CHECK (finished_at >= started_at)
);
