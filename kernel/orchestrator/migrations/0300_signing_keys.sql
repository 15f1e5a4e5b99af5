-- Identity: the orchestrator's ES256 signing keys (spec "Signing key"). db custody keeps the
-- private key here sealed under the master key (AES-256-GCM, additional data
-- `signing-key:<kid>`); aws-kms and command custody record only the public half so retire,
-- revoke and the JWKS work the same for every custody kind.
CREATE TABLE signing_keys (
  kid                 text PRIMARY KEY,
  status              text NOT NULL CHECK (status IN ('active', 'retiring', 'retired', 'revoked')),
  custody             text NOT NULL CHECK (custody IN ('db', 'aws-kms', 'command')),
  public_jwk          jsonb NOT NULL,
  private_key_sealed  text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  retiring_at         timestamptz,
  retired_at          timestamptz,
  revoked_at          timestamptz,
  revoke_reason       text,
  CHECK ((custody = 'db') = (private_key_sealed IS NOT NULL)),
  CHECK (status <> 'revoked' OR revoke_reason IS NOT NULL)
);
-- At most one active key: nodes generating at once converge on one.
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys ((true)) WHERE status = 'active';

-- Attestation statements: signed at once when a live token could be minted, else frozen here
-- (with the SHA-256 of the exact statement bytes) and fulfilled later.
CREATE TABLE attestations (
  id                  uuid PRIMARY KEY,
  run_id              uuid NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  job_id              uuid NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  artifact_name       text NOT NULL,
  artifact_sha256     text NOT NULL CHECK (artifact_sha256 ~ '^[0-9a-f]{64}$'),
  statement           text NOT NULL,
  statement_hash      text NOT NULL CHECK (statement_hash ~ '^[0-9a-f]{64}$'),
  status              text NOT NULL CHECK (status IN ('pending', 'fulfilled')),
  attestation_origin  text CHECK (attestation_origin IN ('live', 'deferred', 'offline-backfill')),
  defer_code          text,
  bundle              jsonb,
  -- A node signing a pending statement holds it for a minute (no double signing across nodes).
  claimed_at          timestamptz,
  created_at          timestamptz NOT NULL DEFAULT now(),
  fulfilled_at        timestamptz,
  CHECK ((status = 'fulfilled') = (bundle IS NOT NULL))
);
CREATE INDEX attestations_pending ON attestations (created_at) WHERE status = 'pending';
CREATE INDEX attestations_job ON attestations (job_id);
