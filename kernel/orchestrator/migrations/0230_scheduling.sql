-- Scheduling across a run's jobs (0230-0239, see docs/scheduling.md): pseudo-jobs that evaluate
-- the workflow filter (`svc:filter`), run the workflow hooks (`svc:hooks`) and evaluate dynamic
-- generators (`svc:generate:<entry>`); what generated jobs need to be dispatched; the index the
-- run-deadline sweeper reads.
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_kind_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_kind_check CHECK (kind IN ('job', 'build', 'filter', 'hooks', 'generate'));
-- The dynamic lock entry whose generator produced this job; null for jobs from the lock.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS generated_by text;
-- The validated lock job entry of a generated job (lock jobs read theirs from runs.lock_entry).
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS definition jsonb;
CREATE INDEX IF NOT EXISTS runs_deadline ON runs (deadline_at)
  WHERE deadline_at IS NOT NULL AND cancelled_by IS NULL AND status IN ('held', 'queued', 'running');
