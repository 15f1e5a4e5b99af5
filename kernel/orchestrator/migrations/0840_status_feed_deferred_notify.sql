-- The run status feed's wake-up may be sent after the commit (issue 19, docs/ingest.md). A
-- transaction that NOTIFYs takes PostgreSQL's one cluster-wide notification lock at commit and
-- holds it through its WAL flush, so webhook deliveries that each created a run committed one
-- flush at a time. A transaction that sets `svc.status_feed_notify` to `deferred` (SET LOCAL, or
-- set_config(..., true)) promises to send the wake-up on `svc_run_status` itself once it has
-- committed (kernel/services/db/wakeups.ts); the feed row is written as before. Every other
-- transaction is unchanged.
CREATE OR REPLACE FUNCTION svc_run_status_feed() RETURNS trigger LANGUAGE plpgsql AS $$
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
  IF current_setting('svc.status_feed_notify', true) IS DISTINCT FROM 'deferred' THEN
    PERFORM pg_notify('svc_run_status', '');
  END IF;
  RETURN NEW;
END $$;
