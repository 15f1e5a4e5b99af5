-- Personal access tokens for the developer CLI (`svc login --token`), minted with
-- `svc-admin relay pat create`. Scoped to one org; only the SHA-256 of a token is stored.
create table relay_pats (
  id uuid primary key,
  org_id text not null references relay_orgs (org_id) on delete cascade,
  -- Who the token is for; recorded as `triggered_by` / `cancelled_by` of dashboard actions.
  user_name text not null,
  name text not null default '',
  token_sha256 bytea not null unique,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index relay_pats_org on relay_pats (org_id, created_at);

-- Dashboard actions on the run index (spec "Other records": the Platform tracks these).
alter table relay_runs add column last_rerun_at timestamptz;
alter table relay_runs add column cancelled_by text;
