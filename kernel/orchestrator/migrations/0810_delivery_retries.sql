-- Deliveries kept for retry (issue 18, docs/ingest.md "Transient failures"): a verified delivery
-- whose processing failed for a reason that can pass (the forge's API unreachable, a database
-- error) is answered accepted and kept here, bytes and all, because GitHub and most senders
-- never redeliver by themselves. The orchestrator retries it with back-off until it is
-- processed or `ingestRetry.giveUpAfterMs` has passed; then the record says `failed` and the row
-- stays (state failed) so an operator can retry it (`svc-admin deliveries retry`).
--
-- The record in webhook_deliveries says where a delivery stands: `retrying` while a row here
-- waits, `failed` when it gave up (or the failure can never pass: a commit that does not exist).
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_status_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN (
  'processing', 'matched', 'no_match', 'no_lock_file', 'duplicate', 'shed',
  'rejected_signature', 'rejected_unknown_source', 'rejected_misconfigured',
  'lockfile_corrupt', 'ignored_fork', 'skipped', 'approval_command', 'retrying', 'failed'));

CREATE TABLE webhook_delivery_retries (
  org_id           text NOT NULL,
  delivery_id      text NOT NULL,
  routing_key      text NOT NULL,
  provider_kind    text NOT NULL,
  -- Generic sources: the URL's source id (part of how the delivery is routed).
  source_id        text,
  headers          jsonb NOT NULL,
  body             bytea NOT NULL,
  client_ip        text NOT NULL,
  received_at      timestamptz NOT NULL,
  state            text NOT NULL DEFAULT 'waiting' CHECK (state IN ('waiting', 'failed')),
  -- Processing attempts so far, the first (live) one included.
  attempts         integer NOT NULL DEFAULT 1,
  next_attempt_at  timestamptz NOT NULL,
  last_error       text NOT NULL,
  -- A node retrying the row holds it until lease_until; a node that died lets it go then.
  lease_node       text,
  lease_until      timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, delivery_id)
);
CREATE INDEX webhook_delivery_retries_due ON webhook_delivery_retries (next_attempt_at) WHERE state = 'waiting';
