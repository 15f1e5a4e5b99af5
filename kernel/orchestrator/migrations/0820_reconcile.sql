-- Reconciliation after downtime (kernel/orchestrator/reconcile, docs/ingest.md "Reconciliation"):
-- for sources whose provider keeps a log of the webhooks it sent (GitHub Apps), the leader asks
-- the forge to send again every delivery no attempt of which was answered 2xx and that this
-- orchestrator never recorded. One row per delivery asked for, so a delivery that keeps failing
-- is asked for at most a few times; one row per source with the last pass's counts.
CREATE TABLE reconcile_redeliveries (
  org_id        text NOT NULL,
  delivery_id   text NOT NULL,
  source_id     uuid NOT NULL,
  attempts      integer NOT NULL DEFAULT 1,
  last_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, delivery_id)
);

CREATE TABLE source_reconciliations (
  source_id     uuid PRIMARY KEY,
  finished_at   timestamptz NOT NULL DEFAULT now(),
  listed        integer NOT NULL,
  missing       integer NOT NULL,
  redelivered   integer NOT NULL,
  error         text
);
