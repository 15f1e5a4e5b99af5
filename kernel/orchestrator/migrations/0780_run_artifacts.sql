-- Run artifacts (ctx.artifacts, issue 13): one row per committed artifact of a run, named
-- uniquely within the run. The object lives at artifacts/<org>/<run>/<sha256 hex>.tar.gz
-- (content-addressed inside the run's namespace); the retention sweep deletes the object and
-- the row once expires_at has passed.
CREATE TABLE run_artifacts (
  id           uuid PRIMARY KEY,
  org_id       text NOT NULL,
  run_id       uuid NOT NULL,
  job_id       uuid,
  name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 128),
  digest       text NOT NULL CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
  size_bytes   bigint NOT NULL CHECK (size_bytes >= 0),
  file_count   integer NOT NULL CHECK (file_count >= 0),
  object_key   text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at   timestamptz NOT NULL,
  UNIQUE (run_id, name)
);
CREATE INDEX run_artifacts_expires ON run_artifacts (expires_at);

-- An upload between its request (pre-signed PUT to a temporary object) and its commit. The
-- name is reserved here so two jobs of a run cannot race for it; the sweep drops uploads (and
-- their temporary objects) that never completed.
CREATE TABLE run_artifact_uploads (
  id              uuid PRIMARY KEY,
  org_id          text NOT NULL,
  run_id          uuid NOT NULL,
  job_id          uuid NOT NULL,
  request_id      text NOT NULL,
  name            text NOT NULL,
  digest          text NOT NULL,
  size_bytes      bigint NOT NULL,
  file_count      integer NOT NULL,
  retention_days  integer NOT NULL,
  temp_key        text NOT NULL UNIQUE,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (job_id, request_id),
  UNIQUE (run_id, name)
);
CREATE INDEX run_artifact_uploads_created ON run_artifact_uploads (created_at);
