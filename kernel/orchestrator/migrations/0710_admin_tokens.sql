-- Minted operator admin tokens (`svc-admin admin-token create`). Only the SHA-256 hash of a token
-- is stored. `unrestricted` tokens hold every scope (like the bootstrap token) and `scopes` is
-- then empty; a restricted token holds exactly `scopes` (docs/admin-api.md).
CREATE TABLE admin_tokens (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  token_hash text NOT NULL UNIQUE,
  unrestricted boolean NOT NULL,
  scopes text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  created_by text NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  CHECK (unrestricted = (cardinality(scopes) = 0))
);

-- A name names one live token; a revoked token's name may be used again.
CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at IS NULL;
