-- Browser sign-in and the device authorization flow (`svc login`, `svc login --device`), and
-- tokens a user mints for themself (`svc pat create --expires-in <days>`).

-- A token may end on its own; NULL means it lives until revoked (operator-minted tokens).
alter table relay_pats add column expires_at timestamptz;

-- Browser sessions of the relay's pages (device approval, later the dashboard). A session is
-- opened by signing in with a personal access token and acts as that token's user and org; it
-- ends with the token (revoked or expired), at sign-out, or at expires_at. The cookie value is
-- kept as SHA-256 only (the CSRF token is derived from it, so it is not stored either).
create table relay_sessions (
  session_sha256 bytea primary key,
  pat_id uuid not null references relay_pats (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index relay_sessions_expiry on relay_sessions (expires_at);

-- RFC 8628 device authorization requests. The device code is kept as SHA-256 only; the user code
-- is short-lived, single use and shown on the CLI's terminal. Approval records who approved; the
-- token itself is minted when the CLI next polls, so no secret rests in this table.
create table relay_device_codes (
  device_sha256 bytea primary key,
  user_code text not null unique,
  status text not null default 'pending' check (status in ('pending', 'approved', 'denied', 'consumed')),
  interval_seconds integer not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  last_polled_at timestamptz,
  -- Set on approval: the token the approver signed in with (its org and user own the new token).
  approved_by_pat uuid references relay_pats (id) on delete cascade,
  decided_at timestamptz,
  client_name text not null default ''
);
create index relay_device_codes_expiry on relay_device_codes (expires_at);
