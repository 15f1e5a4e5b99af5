-- Event-log retention (spec Limits: warm 30 days, then archived hourly; payload objects stay).
-- A record past the warm window is archived in place: `archived_at` is set and the row leaves the
-- warm reads (the event log, `svc-admin deliveries list` without --archived) but stays for
-- `deliveries show`, `--archived` listings and duplicate detection of its delivery id. Its
-- payload object in storage is never touched.
ALTER TABLE webhook_deliveries ADD COLUMN archived_at timestamptz;

-- The hourly pass finds warm rows past the window by received time.
CREATE INDEX webhook_deliveries_warm_received ON webhook_deliveries (received_at) WHERE archived_at IS NULL;
