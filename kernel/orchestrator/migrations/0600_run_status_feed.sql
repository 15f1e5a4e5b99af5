-- Run control (0600-0699): the status feed, the run and job state machine, approval holds,
-- concurrency groups and forge status.
--
-- The run status feed: one row per run or job status change, written by a trigger so no code
-- path that moves a run or a job can forget to report it. Consumers (the relay status forwarder,
-- the forge status reporter) each mark the rows they have handled in their own column and are
-- woken by NOTIFY on `svc_run_status`; several nodes share the work with FOR UPDATE SKIP LOCKED.
-- A row carries only what changed; consumers read the current run or job record when they send,
-- so a consumer that falls behind sends the latest state, never a stale one.
CREATE TABLE run_status_feed (
  seq           bigserial PRIMARY KEY,
  org_id        text NOT NULL,
  run_id        uuid NOT NULL,
  -- NULL for a run-level change.
  job_id        uuid,
  status        text NOT NULL,
  at            timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Set by the relay status forwarder once the change was sent (or found obsolete).
  relay_sent_at timestamptz,
  -- Set by the forge status reporter once the change was handed to its delivery queue (or skipped).
  forge_done_at timestamptz
);
CREATE INDEX run_status_feed_relay_pending ON run_status_feed (seq) WHERE relay_sent_at IS NULL;
CREATE INDEX run_status_feed_forge_pending ON run_status_feed (seq) WHERE forge_done_at IS NULL;
CREATE INDEX run_status_feed_run ON run_status_feed (run_id);

CREATE FUNCTION svc_run_status_feed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
    RETURN NEW;
  END IF;
  IF TG_TABLE_NAME = 'runs' THEN
    INSERT INTO run_status_feed (org_id, run_id, job_id, status) VALUES (NEW.org_id, NEW.id, NULL, NEW.status);
  ELSE
    INSERT INTO run_status_feed (org_id, run_id, job_id, status) VALUES (NEW.org_id, NEW.run_id, NEW.id, NEW.status);
  END IF;
  -- Same payload in one transaction: PostgreSQL delivers it once at commit.
  PERFORM pg_notify('svc_run_status', '');
  RETURN NEW;
END $$;

CREATE TRIGGER runs_status_feed AFTER INSERT OR UPDATE OF status ON runs FOR EACH ROW EXECUTE FUNCTION svc_run_status_feed();
CREATE TRIGGER jobs_status_feed AFTER INSERT OR UPDATE OF status ON jobs FOR EACH ROW EXECUTE FUNCTION svc_run_status_feed();
