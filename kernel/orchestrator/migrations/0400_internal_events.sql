-- Internal events (0400-0419): custom events emitted by steps (`event.emit`) and system events
-- (`job_complete`, `workflow_complete`, …). The insert and its NOTIFY on `svc_internal_events`
-- share one transaction (spec "Internal events", guarantee 1). Delivery to registrations uses
-- the lease columns (spec "Internal event delivery"):
--   pending: processed_at IS NULL AND dlq_reason IS NULL AND (lease_until IS NULL OR lease_until < now())
--            AND next_attempt_at <= now()
--   leased:  lease_until > now() (lease_node, claimed_at set; attempts incremented on claim)
--   processed: processed_at set      DLQ: dlq_reason set (e.g. `exhausted_retries`)
CREATE TABLE internal_events (
  id               uuid PRIMARY KEY,
  name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  payload          jsonb NOT NULL,
  -- Optional target the emitter named (a workflow or repository); null: every matching registration.
  target           text,
  org_id           text NOT NULL,
  -- Who emitted it: a step (run and job set) or the orchestrator itself.
  source           text NOT NULL DEFAULT 'step' CHECK (source IN ('step', 'orchestrator')),
  run_id           uuid,
  job_id           uuid,
  -- How many events led to this one (event → run → event …); the circuit breaker reads it.
  chain_depth      integer NOT NULL DEFAULT 0,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  processed_at     timestamptz,
  lease_until      timestamptz,
  lease_node       text,
  claimed_at       timestamptz,
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_error       text,
  dlq_reason       text,
  dlq_at           timestamptz
);
CREATE INDEX internal_events_pending ON internal_events (next_attempt_at, created_at)
  WHERE processed_at IS NULL AND dlq_reason IS NULL;
CREATE INDEX internal_events_dlq ON internal_events (dlq_at) WHERE dlq_reason IS NOT NULL;
CREATE INDEX internal_events_org ON internal_events (org_id, created_at DESC);
CREATE INDEX internal_events_run ON internal_events (run_id) WHERE run_id IS NOT NULL;
