-- Forge status (0620-0639): run status reported back to where the run came from
-- (docs/forge-status.md). The forge status reporter reads `run_status_feed` (0600), and for every
-- run-level change writes one outbound delivery per target of the run into
-- `forge_status_deliveries`, marking the feed row `forge_done_at` in the same transaction. A
-- delivery worker on every node sends them (FOR UPDATE SKIP LOCKED leases), retrying with
-- exponential back-off and jitter up to a bounded number of attempts. Nothing here ever writes
-- to `runs` or `jobs`: a forge that is down never changes a run.

-- Outbound run-status webhooks, configured per source: where to POST and the HMAC secret. The
-- secret is sealed under the master key with additional data `source-status-webhook:<source id>`.
CREATE TABLE source_status_webhooks (
  source_id     uuid PRIMARY KEY REFERENCES sources(id) ON DELETE CASCADE,
  org_id        text NOT NULL,
  url           text NOT NULL CHECK (url ~ '^https?://'),
  secret_sealed text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- One row per (run status change, target). `target` is `provider` (the source provider's own
-- status API, e.g. a GitHub check run) or `webhook` (the source's run-status webhook).
-- Deliveries of one (run, target, source) go out one at a time in feed order.
CREATE TABLE forge_status_deliveries (
  id               uuid PRIMARY KEY,
  org_id           text NOT NULL,
  run_id           uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  -- The feed row this delivery reports (orders the deliveries of one run and target).
  feed_seq         bigint NOT NULL,
  target           text NOT NULL CHECK (target IN ('provider', 'webhook')),
  source_id        uuid NOT NULL,
  provider_kind    text NOT NULL,
  -- The run status that changed (held, queued, running, completed, failed, …).
  run_status       text NOT NULL,
  -- What is reported: queued, in_progress or completed, with a conclusion when completed.
  state            text NOT NULL CHECK (state IN ('queued', 'in_progress', 'completed')),
  -- When the run changed to `run_status` (the feed row's time).
  changed_at       timestamptz NOT NULL,
  conclusion       text CHECK (conclusion IN ('success', 'failure', 'cancelled', 'skipped', 'timed_out', 'neutral')),
  -- pending (due or waiting for a retry), delivered, failed (attempts exhausted or refused for
  -- good), skipped (the target declined: no commit, turned off), superseded (a later change of
  -- the same run made it pointless before it was sent).
  status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'skipped', 'superseded')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  lease_node       text,
  lease_until      timestamptz,
  last_attempt_at  timestamptz,
  last_error       text,
  last_status_code integer,
  -- What the target returned for the run (a GitHub check run id): later changes update the same object.
  external_id      text,
  delivered_at     timestamptz,
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX forge_status_deliveries_due ON forge_status_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX forge_status_deliveries_order ON forge_status_deliveries (run_id, target, source_id, feed_seq) WHERE status = 'pending';
CREATE INDEX forge_status_deliveries_run ON forge_status_deliveries (run_id, feed_seq);
CREATE INDEX forge_status_deliveries_created ON forge_status_deliveries (created_at DESC);
CREATE INDEX forge_status_deliveries_external ON forge_status_deliveries (run_id, target, source_id, feed_seq DESC) WHERE external_id IS NOT NULL;

-- Every attempt of a delivery, for operators (svc-admin forge-status show).
CREATE TABLE forge_status_attempts (
  delivery_id  uuid NOT NULL REFERENCES forge_status_deliveries(id) ON DELETE CASCADE,
  attempt      integer NOT NULL,
  node_id      text NOT NULL,
  started_at   timestamptz NOT NULL,
  finished_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- delivered, retry, failed, skipped
  outcome      text NOT NULL,
  status_code  integer,
  error        text,
  PRIMARY KEY (delivery_id, attempt)
);
