-- Caches (0210-0229): what the orchestrator knows about the objects it handed out pre-signed
-- URLs for. The objects themselves live in storage (spec "Other records"):
--   source  source/v2/<org_id>/<sourceTarDigest>.tar.gz  behind  source/v2/<org_id>/<contentHash>.hash
--   deps    deps/<platform>-<arch>/<depsHash>.tar.gz      behind  deps/<platform>-<arch>/<lockfileHash>.hash
--   user    cache/<org>/<scope>/<sha256(key)>.tar  (scope `shared` or `iso/<run_id>`)

-- One row per build-cache pointer written through `cache.upload.complete`; last_read_at is
-- refreshed by lookups and drives the TTL sweeper.
CREATE TABLE build_cache_entries (
  pointer_key   text PRIMARY KEY,
  kind          text NOT NULL CHECK (kind IN ('source', 'dep')),
  -- Source entries belong to an org; dependency entries are shared by platform-arch.
  org_id        text,
  platform_arch text,
  -- contentHash (source) or lockfileHash (dep): what the pointer is named after.
  pointer       text NOT NULL,
  -- sourceTarDigest (source) or depsHash (dep): what the pointer holds.
  digest        text NOT NULL,
  object_key    text NOT NULL,
  size_bytes    bigint NOT NULL,
  job_id        uuid,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_read_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX build_cache_entries_read ON build_cache_entries (last_read_at);
CREATE INDEX build_cache_entries_object ON build_cache_entries (object_key);
CREATE INDEX build_cache_entries_org ON build_cache_entries (org_id);

-- Committed user-cache entries. Keys are immutable per (org, scope).
CREATE TABLE user_cache_entries (
  id            uuid PRIMARY KEY,
  org_id        text NOT NULL,
  scope         text NOT NULL CHECK (scope = 'shared' OR scope ~ '^iso/[0-9a-f-]{36}$'),
  key           text NOT NULL,
  object_key    text NOT NULL,
  tar_hash      text NOT NULL,
  size_bytes    bigint NOT NULL CHECK (size_bytes >= 0),
  run_id        uuid,
  job_id        uuid,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_read_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (org_id, scope, key)
);
CREATE INDEX user_cache_entries_prefix ON user_cache_entries (org_id, scope, key text_pattern_ops);
CREATE INDEX user_cache_entries_org_read ON user_cache_entries (org_id, last_read_at);
CREATE INDEX user_cache_entries_read ON user_cache_entries (last_read_at);

-- Phase one of a save: a temporary object the agent uploads to. `save.complete` commits it by
-- copy; a row older than an hour is a crashed upload and the sweeper deletes it and its object.
CREATE TABLE user_cache_uploads (
  id          uuid PRIMARY KEY,
  org_id      text NOT NULL,
  scope       text NOT NULL,
  key         text NOT NULL,
  temp_key    text NOT NULL UNIQUE,
  job_id      uuid NOT NULL,
  request_id  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (job_id, request_id)
);
CREATE INDEX user_cache_uploads_created ON user_cache_uploads (created_at);
