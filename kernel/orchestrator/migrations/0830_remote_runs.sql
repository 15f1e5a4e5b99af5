-- `svc run remote` (docs/run-remote.md): a test run carries the developer's sealed working-tree
-- overlay (its storage key and the box's ephemeral X25519 public key, from which the
-- orchestrator derives the key it hands the run's agents), the sealed local secrets (a box only
-- the orchestrator opens, at dispatch), the fixture's context mapping and the fixture's id.
ALTER TABLE runs
  ADD COLUMN remote_overlay_key   text,
  ADD COLUMN remote_overlay_epk   text,
  ADD COLUMN remote_secrets_box   text,
  ADD COLUMN remote_contexts      jsonb,
  ADD COLUMN remote_fixture       text;
