-- The run and job state machine (kernel/orchestrator/run-control/states.ts is its definition and
-- docs/run-states.md its description; a test keeps this table identical to the TypeScript one).
-- A trigger refuses any insert or status change the table does not list, whatever code path
-- attempts it, so an illegal transition fails its transaction instead of corrupting a run.

-- `held`: a job waiting for an approval (its own gate, or a secret context's required reviewers).
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_status_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_check
  CHECK (status IN ('waiting', 'held', 'queued', 'dispatched', 'running', 'recovering', 'completed', 'failed', 'cancelled', 'skipped'));

CREATE TABLE status_transitions (
  entity      text NOT NULL CHECK (entity IN ('runs', 'jobs')),
  -- `new` for the statuses a row may be inserted with.
  from_status text NOT NULL,
  to_status   text NOT NULL,
  PRIMARY KEY (entity, from_status, to_status)
);

INSERT INTO status_transitions (entity, from_status, to_status) VALUES
  ('runs', 'new', 'held'),
  ('runs', 'new', 'queued'),
  ('runs', 'held', 'queued'),
  ('runs', 'held', 'cancelled'),
  ('runs', 'held', 'failed'),
  ('runs', 'queued', 'running'),
  ('runs', 'queued', 'completed'),
  ('runs', 'queued', 'failed'),
  ('runs', 'queued', 'cancelled'),
  ('runs', 'queued', 'skipped'),
  ('runs', 'running', 'completed'),
  ('runs', 'running', 'failed'),
  ('runs', 'running', 'cancelled'),
  ('runs', 'running', 'skipped'),
  ('jobs', 'new', 'waiting'),
  ('jobs', 'new', 'queued'),
  ('jobs', 'new', 'failed'),
  ('jobs', 'waiting', 'held'),
  ('jobs', 'waiting', 'queued'),
  ('jobs', 'waiting', 'skipped'),
  ('jobs', 'waiting', 'cancelled'),
  ('jobs', 'held', 'waiting'),
  ('jobs', 'held', 'queued'),
  ('jobs', 'held', 'cancelled'),
  ('jobs', 'queued', 'dispatched'),
  ('jobs', 'queued', 'failed'),
  ('jobs', 'queued', 'cancelled'),
  ('jobs', 'dispatched', 'queued'),
  ('jobs', 'dispatched', 'running'),
  ('jobs', 'dispatched', 'recovering'),
  ('jobs', 'dispatched', 'completed'),
  ('jobs', 'dispatched', 'failed'),
  ('jobs', 'dispatched', 'cancelled'),
  ('jobs', 'dispatched', 'skipped'),
  ('jobs', 'running', 'recovering'),
  ('jobs', 'running', 'completed'),
  ('jobs', 'running', 'failed'),
  ('jobs', 'running', 'cancelled'),
  ('jobs', 'running', 'skipped'),
  ('jobs', 'recovering', 'dispatched'),
  ('jobs', 'recovering', 'running'),
  ('jobs', 'recovering', 'failed'),
  ('jobs', 'recovering', 'cancelled');

CREATE FUNCTION svc_check_status_transition() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  prior text := CASE WHEN TG_OP = 'INSERT' THEN 'new' ELSE OLD.status END;
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.status IS NOT DISTINCT FROM OLD.status THEN
    RETURN NEW;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM status_transitions t WHERE t.entity = TG_TABLE_NAME AND t.from_status = prior AND t.to_status = NEW.status) THEN
    RAISE EXCEPTION 'illegal % status transition % -> % (id %)', rtrim(TG_TABLE_NAME, 's'), prior, NEW.status, NEW.id
      USING HINT = 'the allowed transitions are listed in kernel/orchestrator/run-control/states.ts (docs/run-states.md)';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER runs_status_transition BEFORE INSERT OR UPDATE OF status ON runs FOR EACH ROW EXECUTE FUNCTION svc_check_status_transition();
CREATE TRIGGER jobs_status_transition BEFORE INSERT OR UPDATE OF status ON jobs FOR EACH ROW EXECUTE FUNCTION svc_check_status_transition();
