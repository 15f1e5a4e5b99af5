-- The audit trail (docs/audit.md): one row per action that changed something, or was refused in a
-- way worth knowing (an approval by someone a clause does not allow, a refused sign-in). It lives
-- here, in the orchestrator database, because most changing actions happen here (svc-admin works on
-- this database, the relayed dashboard and CLI actions are carried out here); the relay sends its
-- own (sign-in, sign-out, tokens, roles) over the link.
CREATE TABLE audit_events (
  -- Chosen by the writer: a relay record sent twice (a lost ack) is stored once.
  id          uuid PRIMARY KEY,
  at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- '' for actions that belong to no org (operator config, signing keys).
  org_id      text NOT NULL DEFAULT '',
  -- person (signed-in person), token (a personal access token), admin-token, operator (svc-admin
  -- on the database: the OS user), forge (a forge login, e.g. a /svc approve comment), system.
  actor_kind  text NOT NULL CHECK (actor_kind IN ('person', 'token', 'admin-token', 'operator', 'forge', 'system')),
  actor_id    text NOT NULL DEFAULT '',
  actor_name  text NOT NULL,
  action      text NOT NULL CHECK (action ~ '^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$'),
  target      text NOT NULL DEFAULT '',
  outcome     text NOT NULL CHECK (outcome IN ('ok', 'refused', 'failed')),
  detail      text NOT NULL DEFAULT '',
  -- Where the action came from: cli (svc), dashboard, admin (svc-admin), admin-api, comment, relay.
  via         text NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_at ON audit_events (at, id);
CREATE INDEX audit_events_org_at ON audit_events (org_id, at);
CREATE INDEX audit_events_actor ON audit_events (actor_name, at);

-- Append-only, enforced here rather than trusted to the code: UPDATE is always refused; DELETE
-- only inside the retention purge, which sets `svc.audit_purge` for its own transaction
-- (SET LOCAL), and only for rows older than the retention it names.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('svc.audit_purge', true) IS NOT NULL
     AND current_setting('svc.audit_purge', true) <> ''
     AND OLD.at < current_setting('svc.audit_purge', true)::timestamptz THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_events is append-only: % refused (only the retention purge deletes, and only rows older than its cut-off)', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();

CREATE FUNCTION audit_events_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only: TRUNCATE refused' USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events FOR EACH STATEMENT EXECUTE FUNCTION audit_events_no_truncate();
