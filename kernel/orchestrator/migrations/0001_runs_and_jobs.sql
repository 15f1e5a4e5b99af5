-- Runs and jobs: the orchestrator's authoritative execution records. Identity-token claims,
-- dashboards and the relay's run index are all derived from these rows.
--
-- Migration number ranges by subsystem (files apply in name order):
--   0001-0099 runs, jobs, agents (core)   0100-0199 ingest (sources, deliveries, registrations)
--   0200-0299 dispatch queue, caches      0300-0399 identity (signing keys, attestations)
--   0400-0499 internal events, schedules  0500-0599 config versions, secrets, admin

CREATE TABLE runs (
  id                  uuid PRIMARY KEY,
  org_id              text NOT NULL,
  delivery_id         text,
  -- Source the triggering delivery came through (sources are created by the ingest migrations).
  source_id           uuid,
  provider            text NOT NULL,
  repository          text NOT NULL,
  -- Repository that defines the workflow (differs for organization-wide workflows).
  workflow_repository text NOT NULL,
  workflow            text NOT NULL,
  workflow_sha        text NOT NULL,
  workflow_ref        text,
  sha                 text NOT NULL,
  ref                 text,
  event_name          text NOT NULL,
  -- Event kind of the run this one descends from; decides the identity token's sub shape.
  subject_kind        text NOT NULL CHECK (subject_kind IN ('ref', 'pull_request')),
  actor               text NOT NULL DEFAULT '',
  trust_tier          text NOT NULL DEFAULT 'unresolved' CHECK (trust_tier IN ('trusted', 'unknown', 'unresolved')),
  is_fork             text NOT NULL DEFAULT 'unresolved' CHECK (is_fork IN ('true', 'false', 'unresolved')),
  head_ref            text NOT NULL DEFAULT '',
  head_repository     text NOT NULL DEFAULT '',
  source_origin       text NOT NULL DEFAULT 'triggered' CHECK (source_origin IN ('triggered', 'run-remote')),
  status              text NOT NULL CHECK (status IN ('held', 'queued', 'running', 'completed', 'failed', 'cancelled', 'skipped')),
  reason              text,
  content_hash        text NOT NULL,
  lockfile_hash       text,
  -- The lock's workflow entry this run executes (the lock is the contract, frozen per run).
  lock_entry          jsonb NOT NULL,
  event               jsonb NOT NULL,
  changed_files       jsonb,
  parent_run_id       uuid REFERENCES runs(id),
  original_run_id     uuid REFERENCES runs(id),
  triggered_by        text,
  cancelled_by        text,
  deadline_at         timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  started_at          timestamptz,
  finished_at         timestamptz,
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runs_org_created ON runs (org_id, created_at DESC);
CREATE INDEX runs_delivery ON runs (org_id, delivery_id);
CREATE INDEX runs_original ON runs (original_run_id);
-- At most one run per (delivery, workflow): a replayed delivery never runs a workflow twice.
CREATE UNIQUE INDEX runs_one_per_delivery_workflow ON runs (org_id, delivery_id, workflow_repository, workflow)
  WHERE delivery_id IS NOT NULL AND parent_run_id IS NULL;

CREATE TABLE jobs (
  id                  uuid PRIMARY KEY,
  run_id              uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  org_id              text NOT NULL,
  -- Job name in the lock; matrix instances share it and differ by `matrix`.
  name                text NOT NULL,
  display_name        text NOT NULL,
  kind                text NOT NULL DEFAULT 'job' CHECK (kind IN ('job', 'build')),
  matrix              jsonb,
  needs               text[] NOT NULL DEFAULT '{}',
  runs_on             text[] NOT NULL DEFAULT '{}',
  status              text NOT NULL CHECK (status IN ('waiting', 'queued', 'dispatched', 'running', 'recovering', 'completed', 'failed', 'cancelled', 'skipped')),
  reason              text,
  attempts            integer NOT NULL DEFAULT 0,
  agent_id            text,
  recovery_deadline   timestamptz,
  outputs             jsonb,
  -- Coalescing key of a build job (`contentHash:lockfileHash`).
  build_key           text,
  queued_at           timestamptz,
  dispatched_at       timestamptz,
  started_at          timestamptz,
  finished_at         timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_run ON jobs (run_id);
CREATE INDEX jobs_queue ON jobs (status, queued_at) WHERE status = 'queued';
CREATE INDEX jobs_agent ON jobs (agent_id) WHERE agent_id IS NOT NULL;
CREATE UNIQUE INDEX jobs_one_build_per_key ON jobs (org_id, build_key)
  WHERE kind = 'build' AND status IN ('waiting', 'queued', 'dispatched', 'running', 'recovering');

CREATE TABLE job_steps (
  job_id      uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  index       integer NOT NULL,
  name        text NOT NULL,
  status      text NOT NULL,
  reason      text,
  started_at  timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (job_id, index)
);

CREATE TABLE job_logs (
  job_id  uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  seq     integer NOT NULL,
  lines   jsonb NOT NULL,
  PRIMARY KEY (job_id, seq)
);

CREATE TABLE agents (
  id            text PRIMARY KEY,
  -- SHA-256 of the agent token it first registered with; a different token is refused.
  token_hash    text,
  labels        text[] NOT NULL DEFAULT '{}',
  ephemeral     boolean NOT NULL DEFAULT false,
  connected     boolean NOT NULL DEFAULT false,
  node_id       text,
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE agent_tokens (
  id          uuid PRIMARY KEY,
  token_hash  text NOT NULL UNIQUE,
  description text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz,
  revoked_at  timestamptz
);
