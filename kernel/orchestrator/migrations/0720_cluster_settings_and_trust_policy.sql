-- Cluster-wide settings (docs/cluster.md): one row every node reads and follows. The first node to
-- start seeds it from its own config (cluster.maxDispatchAttempts,
-- sealedSecretsRetryBackoffMs, SVC_SEALED_SECRETS_RETRY_BACKOFF_MS); after that only PATCH /api/v1/admin/cluster-settings
-- (svc-admin cluster-settings set) changes it, and a NOTIFY on svc_cluster_settings tells every
-- node. Range checks live in the HTTP schema; these only keep nonsense out.
CREATE TABLE cluster_settings (
  id integer PRIMARY KEY CHECK (id = 1),
  max_dispatch_attempts integer NOT NULL CHECK (max_dispatch_attempts >= 1),
  sealed_secrets_retry_backoff_ms integer NOT NULL CHECK (sealed_secrets_retry_backoff_ms >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  updated_by text NOT NULL
);

-- An organization's trust policy (docs/trust-policy.md). A missing row is the default policy.
-- fork_policy NULL: not set by the org (sources fall back to `run`).
CREATE TABLE org_trust_policies (
  org_id text PRIMARY KEY,
  fork_policy text CHECK (fork_policy IN ('run', 'ignore')),
  updated_at timestamptz NOT NULL DEFAULT now(),
  updated_by text NOT NULL
);

-- A source's fork policy may now be unset: it then follows its org's trust policy. `run` was the
-- default every source got without asking, so existing `run` rows become unset (no change until
-- an org sets `ignore`); `ignore` rows keep their explicit choice.
ALTER TABLE sources ALTER COLUMN fork_policy DROP NOT NULL;
ALTER TABLE sources ALTER COLUMN fork_policy DROP DEFAULT;
UPDATE sources SET fork_policy = NULL WHERE fork_policy = 'run';
