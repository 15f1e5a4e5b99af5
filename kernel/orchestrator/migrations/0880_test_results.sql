-- Test results as data (docs/test-results.md, issue 41). The agent parses a step's JUnit XML or
-- TAP files and sends the cases; one row per case per job attempt. `repository` and `sha` are
-- copied from the run so history and flakiness read one table through its own indexes.
CREATE TABLE test_results (
  id           bigserial PRIMARY KEY,
  org_id       text NOT NULL,
  repository   text NOT NULL,
  sha          text NOT NULL,
  run_id       uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  job_id       uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt      integer NOT NULL DEFAULT 1,
  step_index   integer NOT NULL,
  step_name    text NOT NULL,
  suite        text NOT NULL,
  name         text NOT NULL,
  file         text,
  status       text NOT NULL CHECK (status IN ('passed', 'failed', 'skipped', 'errored')),
  duration_ms  integer,
  message      text,
  output       text,
  -- The case failed while an active quarantine entry covered it (its failure did not count).
  quarantined  boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX test_results_run ON test_results (run_id, job_id);
CREATE INDEX test_results_history ON test_results (org_id, repository, suite, name, created_at DESC);
CREATE INDEX test_results_commit ON test_results (org_id, repository, sha, suite, name);

-- One row per step (of a job attempt) that reported results: the counts, and what the
-- conclusion needs. `failed_by_tests`: the step failed with a non-zero command exit, its files
-- were all read without a problem, and at least one test failed or errored. `waived`: that, and
-- every failing test was quarantined, so the step (and its job) did not fail.
CREATE TABLE test_steps (
  job_id              uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt             integer NOT NULL DEFAULT 1,
  step_index          integer NOT NULL,
  run_id              uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  org_id              text NOT NULL,
  step_name           text NOT NULL,
  total               integer NOT NULL DEFAULT 0,
  passed              integer NOT NULL DEFAULT 0,
  failed              integer NOT NULL DEFAULT 0,
  skipped             integer NOT NULL DEFAULT 0,
  errored             integer NOT NULL DEFAULT 0,
  quarantined_failed  integer NOT NULL DEFAULT 0,
  final               boolean NOT NULL DEFAULT false,
  exit_failure        boolean NOT NULL DEFAULT false,
  problems            jsonb NOT NULL DEFAULT '[]',
  failed_by_tests     boolean NOT NULL DEFAULT false,
  waived              boolean NOT NULL DEFAULT false,
  updated_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (job_id, attempt, step_index)
);
CREATE INDEX test_steps_run ON test_steps (run_id);

-- A test that passed and failed on the same commit: marked when the second outcome is recorded,
-- with the runs that show each outcome as evidence.
CREATE TABLE test_flaky (
  org_id        text NOT NULL,
  repository    text NOT NULL,
  suite         text NOT NULL,
  name          text NOT NULL,
  sha           text NOT NULL,
  passed_runs   uuid[] NOT NULL DEFAULT '{}',
  failed_runs   uuid[] NOT NULL DEFAULT '{}',
  first_seen_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_seen_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (org_id, repository, suite, name, sha)
);
CREATE INDEX test_flaky_recent ON test_flaky (org_id, last_seen_at DESC);

-- Quarantine: an org-wide entry has repository ''. Rows are never deleted: leaving quarantine
-- sets removed_*, so both moves stay visible with who, when and why.
CREATE TABLE test_quarantine (
  id              uuid PRIMARY KEY,
  org_id          text NOT NULL,
  repository      text NOT NULL DEFAULT '',
  suite           text NOT NULL,
  name            text NOT NULL,
  reason          text NOT NULL,
  added_by        text NOT NULL,
  added_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  removed_by      text,
  removed_reason  text,
  removed_at      timestamptz
);
CREATE UNIQUE INDEX test_quarantine_active ON test_quarantine (org_id, repository, suite, name) WHERE removed_at IS NULL;
CREATE INDEX test_quarantine_org ON test_quarantine (org_id, added_at DESC);
