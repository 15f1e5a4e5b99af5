-- The event log as operators read it (`svc-admin deliveries list`, GET /api/v1/admin/deliveries):
-- newest first by received time, often narrowed to the last hour or day.
CREATE INDEX IF NOT EXISTS webhook_deliveries_received ON webhook_deliveries (received_at DESC);
