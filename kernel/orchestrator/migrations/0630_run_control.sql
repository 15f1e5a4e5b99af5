-- Run control (docs/run-control.md): approval holds at workflow, job and step level and for a
-- secret context's required reviewers; concurrency groups; the protection rules a context adds
-- (required reviewers, wait timer, concurrency limit); gates a ready job passes before `queued`.

-- One pending decision. Released once: a decision locks the row and acts only while `pending`.
CREATE TABLE approval_holds (
  id          uuid PRIMARY KEY,
  org_id      text NOT NULL,
  run_id      uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  -- NULL for a workflow-level hold (the whole run).
  job_id      uuid REFERENCES jobs(id) ON DELETE CASCADE,
  level       text NOT NULL CHECK (level IN ('workflow', 'job', 'step', 'context')),
  -- Step-level holds: the step's index and name in the job.
  step_index  integer,
  step_name   text,
  -- Context holds: the secret context whose required reviewers must approve.
  context     text,
  -- The normalized clauses (lock `approval.clauses`); every clause must be met.
  clauses     jsonb NOT NULL,
  reason      text,
  status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
  expires_at  timestamptz,
  decided_at  timestamptz,
  decided_by  text,
  -- What ended the hold, as a sentence (`approved by alice`, `rejected by bob: not now`).
  outcome     text,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- One hold per gate: creating it twice (two nodes, a retried pass) finds the first.
CREATE UNIQUE INDEX approval_holds_one_per_gate ON approval_holds
  (run_id, coalesce(job_id, '00000000-0000-0000-0000-000000000000'::uuid), level, coalesce(step_index, -1), coalesce(context, ''));
CREATE INDEX approval_holds_pending ON approval_holds (expires_at) WHERE status = 'pending';

-- Every approve or reject received, counted or not: anyone else's command is kept with why.
CREATE TABLE approval_votes (
  id             uuid PRIMARY KEY,
  org_id         text NOT NULL,
  run_id         uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  hold_id        uuid REFERENCES approval_holds(id) ON DELETE CASCADE,
  actor          text NOT NULL,
  decision       text NOT NULL CHECK (decision IN ('approve', 'reject')),
  via            text NOT NULL CHECK (via IN ('comment', 'cli', 'dashboard', 'admin')),
  comment        text NOT NULL DEFAULT '',
  counted        boolean NOT NULL,
  ignored_reason text,
  -- Teams and roles the provider named for the actor when the vote was cast (NULL: unknown).
  principals     jsonb,
  created_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX approval_votes_run ON approval_votes (run_id, created_at);
CREATE INDEX approval_votes_hold ON approval_votes (hold_id);

-- What a `/svc approve|reject` comment came to.
ALTER TABLE approval_commands ADD COLUMN outcome text;

-- Concurrency groups. A run of a workflow with `concurrency` joins a group: `waiting` until the
-- run-control worker admits it (`admitted`); NULL when the workflow has none. The key is NULL
-- until the filter pseudo-job reports a key that workflow code computes.
ALTER TABLE runs ADD COLUMN concurrency_group text;
ALTER TABLE runs ADD COLUMN concurrency_state text CHECK (concurrency_state IN ('waiting', 'admitted'));
ALTER TABLE runs ADD COLUMN concurrency_max integer;
ALTER TABLE runs ADD COLUMN concurrency_cancel boolean NOT NULL DEFAULT false;
-- Only unfinished runs matter to admission: the indexes leave finished ones out.
CREATE INDEX runs_concurrency_waiting ON runs (org_id, concurrency_group, created_at)
  WHERE concurrency_state = 'waiting' AND status NOT IN ('completed', 'failed', 'cancelled', 'skipped');
CREATE INDEX runs_concurrency_members ON runs (org_id, concurrency_group, created_at)
  WHERE concurrency_state IS NOT NULL AND status NOT IN ('completed', 'failed', 'cancelled', 'skipped');

-- Gates of a job: `gated` jobs (an approval, a concurrency group or a secret context) do not go
-- from ready to `queued` in progression; they get `ready_at` and the run-control worker passes
-- them through their gates. Job-level concurrency uses the same columns as runs.
ALTER TABLE jobs ADD COLUMN gated boolean NOT NULL DEFAULT false;
ALTER TABLE jobs ADD COLUMN ready_at timestamptz;
ALTER TABLE jobs ADD COLUMN concurrency_group text;
-- The contexts the job holds while queued or running (for a context's concurrency limit).
ALTER TABLE jobs ADD COLUMN held_contexts text[] NOT NULL DEFAULT '{}';
CREATE INDEX jobs_gate_ready ON jobs (ready_at) WHERE status = 'waiting' AND ready_at IS NOT NULL;
CREATE INDEX jobs_held_contexts ON jobs USING gin (held_contexts) WHERE status IN ('queued', 'dispatched', 'running', 'recovering');

-- Protection rules a context adds to its branch, repository and trust rules.
ALTER TABLE secret_contexts ADD COLUMN required_reviewers text[] NOT NULL DEFAULT '{}';
ALTER TABLE secret_contexts ADD COLUMN wait_timer_seconds integer NOT NULL DEFAULT 0 CHECK (wait_timer_seconds BETWEEN 0 AND 2592000);
-- At most this many jobs using the context queued or running at once; NULL = no limit.
ALTER TABLE secret_contexts ADD COLUMN concurrency_limit integer CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1);
