-- The complete run index (docs/run-index.md): what `execution.status` and `job.status.forward`
-- carry, so the relay lists an org's runs (`GET /v1/orgs/:orgId/runs`, `svc runs list`) without
-- asking an orchestrator. `last_rerun_at` and `cancelled_by` (0002) stay the relay's own columns;
-- `cancelled_by` is also taken from the orchestrator's record.
alter table relay_runs
  add column reason text,
  add column event_name text,
  add column ref text,
  add column sha text,
  add column actor text,
  add column created_at timestamptz,
  add column started_at timestamptz,
  add column finished_at timestamptz,
  add column parent_run_id text,
  add column original_run_id text,
  add column triggered_by text;
-- Rows of older orchestrators: first seen is the best creation time there is.
update relay_runs set created_at = updated_at;
alter table relay_runs alter column created_at set not null;
create index relay_runs_org_created on relay_runs (org_id, created_at desc, run_id desc);
create index relay_runs_org_repository_created on relay_runs (org_id, repository, created_at desc, run_id desc);
create index relay_runs_org_status_created on relay_runs (org_id, status, created_at desc, run_id desc);

alter table relay_jobs
  add column kind text,
  add column reason text,
  add column started_at timestamptz,
  add column finished_at timestamptz;
