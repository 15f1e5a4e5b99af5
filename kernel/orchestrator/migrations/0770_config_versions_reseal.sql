-- Master-key rotation over config versions (docs/master-key.md): versions stay immutable, except
-- that a transaction which declares itself a re-seal (`SELECT set_config('svc.reseal_sealed_values',
-- 'on', true)`, kernel/orchestrator/config/sealed-store.ts) may rewrite the sealed values at
-- `encrypted_paths` and nothing else: every other column, every other part of the document and
-- the list of sealed paths must stay as they were, and each sealed path must still hold a string.
-- DELETE and TRUNCATE stay refused.
CREATE OR REPLACE FUNCTION config_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_rest jsonb;
  new_rest jsonb;
  path text;
BEGIN
  IF TG_OP = 'UPDATE' AND current_setting('svc.reseal_sealed_values', true) = 'on' THEN
    IF (NEW.id, NEW.version, NEW.created_at, NEW.created_by, NEW.description, NEW.encrypted_paths)
       IS NOT DISTINCT FROM (OLD.id, OLD.version, OLD.created_at, OLD.created_by, OLD.description, OLD.encrypted_paths) THEN
      old_rest := OLD.config;
      new_rest := NEW.config;
      FOREACH path IN ARRAY OLD.encrypted_paths LOOP
        IF jsonb_typeof(NEW.config #> string_to_array(path, '.')) IS DISTINCT FROM 'string' THEN
          RAISE EXCEPTION 'config versions are immutable: a re-seal must leave a sealed string at %', path
            USING ERRCODE = 'restrict_violation';
        END IF;
        old_rest := old_rest #- string_to_array(path, '.');
        new_rest := new_rest #- string_to_array(path, '.');
      END LOOP;
      IF old_rest = new_rest THEN
        RETURN NEW;
      END IF;
    END IF;
    RAISE EXCEPTION 'config versions are immutable: a re-seal may change only the sealed values at encrypted_paths'
      USING ERRCODE = 'restrict_violation';
  END IF;
  RAISE EXCEPTION 'config versions are immutable: % on config_versions is refused', TG_OP
    USING ERRCODE = 'restrict_violation';
END;
$$;
