-- The W3C traceparent of a run's span (docs/tracing.md): reserved when the run is created from a
-- delivery, so its queue wait, dispatch, jobs and steps, recorded later and on other processes,
-- join the delivery's trace. Null when tracing was off (or the run was not made from a delivery).
ALTER TABLE runs ADD COLUMN trace_context text;
