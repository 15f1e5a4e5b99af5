-- Shared config versions (docs/config.md; spec "Shared configuration and config versions").
-- Every write of the shared config is a new row; rows never change, so the history is the audit
-- trail and a rollback is a new row copying an older one's document.
CREATE TABLE config_versions (
  id              uuid PRIMARY KEY,
  version         integer GENERATED ALWAYS AS IDENTITY UNIQUE,
  -- The shared-config document (only shared fields); values at `encrypted_paths` are sealed
  -- with the master key (AES-256-GCM, additional data `config-field:<path>`).
  config          jsonb NOT NULL CHECK (jsonb_typeof(config) = 'object'),
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- `<channel>:<action>`: cli:seed, cli:set, cli:rollback, api:set, api:rollback.
  created_by      text NOT NULL CHECK (created_by ~ '^[a-z]+:[a-z][a-z-]*$'),
  description     text CHECK (description IS NULL OR length(description) <= 1000),
  encrypted_paths text[] NOT NULL DEFAULT '{}'
);

-- Immutability: the database itself refuses to change or remove a version.
CREATE FUNCTION config_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'config versions are immutable: % on config_versions is refused', TG_OP
    USING ERRCODE = 'restrict_violation';
END;
$$;

CREATE TRIGGER config_versions_no_update_delete
  BEFORE UPDATE OR DELETE ON config_versions
  FOR EACH ROW EXECUTE FUNCTION config_versions_immutable();

CREATE TRIGGER config_versions_no_truncate
  BEFORE TRUNCATE ON config_versions
  FOR EACH STATEMENT EXECUTE FUNCTION config_versions_immutable();
