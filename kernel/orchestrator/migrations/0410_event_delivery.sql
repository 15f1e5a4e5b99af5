-- Delivery of internal events to registrations, schedules and the cluster of orchestrators
-- (0410-0449). docs/events.md describes the state machine these columns carry.

-- How deep in an event chain a run sits: 0 for a run a webhook, a re-run or a schedule started,
-- the starting event's depth + 1 for a run an internal event started. An event a run emits
-- carries the run's depth, so the circuit breaker can stop a chain that would never end.
ALTER TABLE runs ADD COLUMN chain_depth integer NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN triggering_event_id uuid;

-- What the delivery of one event came to: the runs it created (or found, on a redelivery) and
-- why the registrations that did not match did not.
ALTER TABLE internal_events ADD COLUMN run_ids uuid[] NOT NULL DEFAULT '{}';
ALTER TABLE internal_events ADD COLUMN outcome text;
ALTER TABLE internal_events ADD COLUMN delivered_at timestamptz;

-- Events the circuit breaker refused before they were written (spec "Delivery guarantees" 2).
CREATE TABLE internal_event_refusals (
  id          uuid PRIMARY KEY,
  org_id      text NOT NULL,
  name        text NOT NULL,
  run_id      uuid,
  job_id      uuid,
  chain_depth integer NOT NULL,
  -- `chain_depth` or `rate_limit`.
  reason      text NOT NULL CHECK (reason IN ('chain_depth', 'rate_limit')),
  detail      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX internal_event_refusals_org ON internal_event_refusals (org_id, created_at DESC);

-- One row per schedule trigger of a registered workflow. Kept across registration replacement
-- (keyed by what the schedule is, not by the registration row), so a default-branch push that
-- leaves a schedule unchanged does not move or drop its next firing.
CREATE TABLE schedules (
  id              uuid PRIMARY KEY,
  org_id          text NOT NULL,
  repository      text NOT NULL,
  workflow        text NOT NULL,
  trigger_index   integer NOT NULL,
  cron            text NOT NULL,
  timezone        text NOT NULL,
  next_due_at     timestamptz NOT NULL,
  last_due_at     timestamptz,
  last_fired_at   timestamptz,
  last_event_id   uuid,
  -- Set when the expression cannot be evaluated (it never fires; the reason says why).
  broken_reason   text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX schedules_key ON schedules (org_id, lower(repository), workflow, trigger_index, cron, timezone);
CREATE INDEX schedules_due ON schedules (next_due_at) WHERE broken_reason IS NULL;

-- The orchestrators sharing this database. `leader` is informational (the advisory lock decides);
-- a node that stops heart-beating is shown as such and dropped after a while.
CREATE TABLE cluster_nodes (
  node_id       text PRIMARY KEY,
  address       text NOT NULL,
  incarnation   uuid NOT NULL,
  pid           integer NOT NULL,
  version       text NOT NULL,
  leader        boolean NOT NULL DEFAULT false,
  started_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  stopped_at    timestamptz
);

-- The cluster's join secret as a SHA-256 (hex); the first node that brings one records it and
-- every later node must bring the same.
CREATE TABLE cluster_membership (
  id               integer PRIMARY KEY CHECK (id = 1),
  join_token_hash  text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  created_by       text NOT NULL
);
