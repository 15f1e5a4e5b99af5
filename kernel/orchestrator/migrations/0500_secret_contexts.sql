-- Secret contexts (spec "Authentication" 6-7): named groups of secrets with protection rules,
-- checked against the run at dispatch before any value is released to a job.
--
-- A context with no binding (no repository pattern and no org) releases nothing: it fails
-- closed, and the admin commands that touch it warn about it.

CREATE TABLE secret_contexts (
  name                  text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'),
  -- Branch globs the run's ref must match (`refs/heads/<branch>`); empty = any ref.
  branches              text[] NOT NULL DEFAULT '{}',
  -- The binding: repository patterns (`owner/repo`, globs) and org ids allowed to use it.
  repositories          text[] NOT NULL DEFAULT '{}',
  orgs                  text[] NOT NULL DEFAULT '{}',
  -- `trusted`: only runs whose trust tier is trusted; `any`: every tier.
  min_trust             text NOT NULL DEFAULT 'trusted' CHECK (min_trust IN ('trusted', 'any')),
  -- Test runs (`svc run remote`) may reach only contexts with this flag.
  allow_local_execution boolean NOT NULL DEFAULT false,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now()
);

-- One secret: sealed with the master key, additional data `secret:<context>:<key>`.
CREATE TABLE secret_values (
  context      text NOT NULL REFERENCES secret_contexts (name) ON DELETE CASCADE,
  key          text NOT NULL CHECK (key ~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$'),
  value_sealed text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (context, key)
);
