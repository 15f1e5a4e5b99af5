-- Log search matches the text a person sees (docs/log-search.md): colour and cursor escapes (CSI
-- sequences such as ESC[1;31m, which test runners and compilers print around words) are taken out
-- of the searched text, so `line 12 failed` finds `ESC[32mline ESC[0m12 failed` as the log viewer
-- shows it. A text without ESC is returned as it is, without running the expression.
CREATE FUNCTION svc_log_plain(text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT CASE WHEN strpos($1, E'\x1b') = 0 THEN $1 ELSE regexp_replace($1, E'\x1b\\[[0-9;?]*[ -/]*[@-~]', '', 'g') END $$;

-- The same expression written out, not a call of svc_log_plain: PostgreSQL 17+ runs an index's
-- expressions during REINDEX, VACUUM and ANALYZE with search_path = pg_catalog, pg_temp, where an
-- unqualified function of ours is not found; built-in functions alone always are.
CREATE OR REPLACE FUNCTION svc_log_chunk_text(lines jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT CASE WHEN strpos(c.t, E'\x1b') = 0 THEN c.t ELSE regexp_replace(c.t, E'\x1b\\[[0-9;?]*[ -/]*[@-~]', '', 'g') END
        FROM (SELECT string_agg(l->>'text', E'\n') AS t FROM jsonb_array_elements(lines) AS l) AS c $$;

-- The index holds the old function's values: built again from the new one.
REINDEX INDEX job_logs_text_trgm;
