-- The traceparent of the span a run's span sits under (the delivery's ingest span): the run span
-- is recorded when the run finishes, with the id in trace_context and this as its parent.
ALTER TABLE runs ADD COLUMN trace_parent text;
