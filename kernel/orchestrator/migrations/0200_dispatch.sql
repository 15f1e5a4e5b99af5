-- Dispatch queue (0200-0299): what the dispatcher, the agent endpoint and the recovery sweeper
-- keep beyond the core tables of 0001.

-- `job.context` as the agent reported it (node version, OS, arch, sandbox).
ALTER TABLE jobs ADD COLUMN context jsonb;
-- Who asked to cancel a dispatched/running job; the agent reports `cancelled` later.
ALTER TABLE jobs ADD COLUMN cancel_requested_at timestamptz;
ALTER TABLE jobs ADD COLUMN cancelled_by text;
-- When the "No jobs dispatched" reason was last (re)computed for a queued job.
ALTER TABLE jobs ADD COLUMN unroutable_since timestamptz;
CREATE INDEX jobs_recovering ON jobs (recovery_deadline) WHERE status = 'recovering';
CREATE INDEX jobs_run_status ON jobs (run_id, status);

-- The connection an agent holds right now: a node only acts on an agent's disconnect when its
-- own session is still the current one (the agent may already have reconnected elsewhere).
ALTER TABLE agents ADD COLUMN session_id uuid;
ALTER TABLE agents ADD COLUMN os text;
ALTER TABLE agents ADD COLUMN arch text;
ALTER TABLE agents ADD COLUMN sandboxes text[] NOT NULL DEFAULT '{}';
ALTER TABLE agents ADD COLUMN sdk_version text;
ALTER TABLE agents ADD COLUMN connected_at timestamptz;
CREATE INDEX agents_connected ON agents (connected) WHERE connected;

-- Facts other subsystems react to (`job_complete`, `workflow_complete` triggers, dashboards).
CREATE TABLE run_events (
  id          bigserial PRIMARY KEY,
  run_id      uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  job_id      uuid REFERENCES jobs(id) ON DELETE CASCADE,
  kind        text NOT NULL CHECK (kind IN ('job_complete', 'workflow_complete')),
  status      text NOT NULL,
  payload     jsonb NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX run_events_run ON run_events (run_id, id);
-- A job or a run completes once, whatever node saw it.
CREATE UNIQUE INDEX run_events_once ON run_events (kind, run_id, coalesce(job_id, '00000000-0000-0000-0000-000000000000'::uuid));
