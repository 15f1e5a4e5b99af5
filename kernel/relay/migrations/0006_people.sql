-- People and roles (docs/sso.md, docs/roles.md): a person is whoever signed in through a
-- configured identity provider (OpenID Connect or GitHub); roles are per org, from the person's
-- groups (relay_group_roles) or granted by an admin (relay_role_grants). Tokens and sessions of a
-- person carry person_id; operator-minted tokens keep person_id null and act as before.

create table relay_people (
  id uuid primary key,
  -- The provider id of the relay config (relay.sso.providers.<id>).
  provider text not null,
  -- OIDC `sub`, or the GitHub numeric user id: what identifies the person at the provider.
  subject text not null,
  -- The name recorded as actor (preferred_username, else email, else sub; GitHub login).
  login text not null,
  display_name text not null,
  email text,
  -- The provider's groups as of the last sign-in or refresh (GitHub: "<org>/<team-slug>").
  groups text[] not null default '{}',
  -- Set when the provider refused the person at a refresh: no roles, no refresh, no sign-in
  -- until the provider signs them in again.
  disabled_at timestamptz,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  unique (provider, subject)
);

-- Roles an admin gave a person in an org (svc-admin relay role grant, PUT /v1/orgs/:org/people/:id/roles).
create table relay_role_grants (
  org_id text not null references relay_orgs (org_id) on delete cascade,
  person_id uuid not null references relay_people (id) on delete cascade,
  role text not null check (role in ('viewer', 'developer', 'approver', 'admin')),
  granted_by text not null,
  granted_at timestamptz not null default now(),
  primary key (org_id, person_id, role)
);
create index relay_role_grants_person on relay_role_grants (person_id);

-- Group → org role. Rows of source 'config' are rewritten from the relay config at every start;
-- rows of source 'admin' are kept.
create table relay_group_roles (
  org_id text not null references relay_orgs (org_id) on delete cascade,
  provider text not null,
  group_name text not null,
  role text not null check (role in ('viewer', 'developer', 'approver', 'admin')),
  source text not null default 'admin' check (source in ('config', 'admin')),
  primary key (org_id, provider, group_name, role)
);

-- What the provider gave at a sign-in, so a refresh can ask it again: its refresh token (and
-- access token, for userinfo / GitHub's API), sealed with a key derived from the provider's
-- client secret (AES-256-GCM), never in the clear.
create table relay_provider_grants (
  id uuid primary key,
  person_id uuid not null references relay_people (id) on delete cascade,
  provider text not null,
  sealed bytea not null,
  created_at timestamptz not null default now(),
  checked_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index relay_provider_grants_person on relay_provider_grants (person_id);

-- A token of a person (browser sign-in, svc login through a provider): its person, the provider
-- grant it is refreshed through, and the SHA-256 of its refresh token. Scopes (role names) narrow
-- what any token may do; null is unrestricted (every token minted before this migration).
alter table relay_pats
  add column person_id uuid references relay_people (id) on delete cascade,
  add column grant_id uuid references relay_provider_grants (id) on delete set null,
  add column refresh_sha256 bytea unique,
  add column scopes text[];
create index relay_pats_person on relay_pats (person_id) where person_id is not null;

-- A sign-in through a provider in progress (authorization code flow): the state (its SHA-256;
-- the browser holds the value in a short-lived cookie too), the nonce and PKCE verifier to check
-- the answer with, and where to go after. Single use, ten minutes.
create table relay_sso_logins (
  state_sha256 bytea primary key,
  provider text not null,
  nonce text not null,
  code_verifier text not null,
  next_path text not null,
  org_id text,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index relay_sso_logins_expiry on relay_sso_logins (expires_at);
