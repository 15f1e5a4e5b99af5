-- RFC 3161 signed timestamps over attestation signatures (docs/provenance.md, "Signed timestamps").
-- A key revoked with --compromised-at keeps verifying what a TSA dated before that time; a plain
-- revoke (compromised_at null) keeps its all-or-nothing meaning.
ALTER TABLE signing_keys ADD COLUMN compromised_at timestamptz;
ALTER TABLE signing_keys ADD CONSTRAINT signing_keys_compromised_only_revoked CHECK (compromised_at IS NULL OR status = 'revoked');

-- The token itself lives in the bundle (timestampVerificationData.rfc3161Timestamps); these say,
-- for listing, when the TSA dated the signature or why it gave no timestamp.
ALTER TABLE attestations ADD COLUMN timestamped_at timestamptz;
ALTER TABLE attestations ADD COLUMN timestamp_error text;
