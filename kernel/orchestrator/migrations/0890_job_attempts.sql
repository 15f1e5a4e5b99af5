-- Retries and restart from failed jobs (docs/run-states.md "Retries", "Restart from failed jobs").
--
-- A retry is a new attempt of the same job: a new `jobs` row (its own logs, steps and test
-- results), while the attempt it retries stays `failed` (a terminal status never changes) and is
-- marked `retried_as`; progression and the run outcome ignore such rows.
ALTER TABLE jobs ADD COLUMN attempt integer NOT NULL DEFAULT 1 CHECK (attempt BETWEEN 1 AND 10);
-- Null on attempt 1: coalesce(first_attempt_id, id) names the job across its attempts.
ALTER TABLE jobs ADD COLUMN first_attempt_id uuid;
ALTER TABLE jobs ADD COLUMN retried_as uuid;
-- Back-off: the attempt is not queued before this time (the run-control worker releases it).
ALTER TABLE jobs ADD COLUMN retry_at timestamptz;
ALTER TABLE jobs ADD COLUMN retry_cause text CHECK (retry_cause IN ('agent-lost', 'exit-code', 'failed-tests'));
-- Restart from failed jobs: a job that completed in the parent run, copied completed with its
-- outputs; it runs nothing and points at the job it reuses.
ALTER TABLE jobs ADD COLUMN reused_from uuid;
ALTER TABLE runs ADD COLUMN rerun_mode text CHECK (rerun_mode IN ('all', 'failed'));
CREATE INDEX jobs_first_attempt ON jobs (first_attempt_id) WHERE first_attempt_id IS NOT NULL;

-- A reused job is inserted `completed` (kernel/orchestrator/run-control/states.ts).
INSERT INTO status_transitions (entity, from_status, to_status) VALUES ('jobs', 'new', 'completed') ON CONFLICT DO NOTHING;
