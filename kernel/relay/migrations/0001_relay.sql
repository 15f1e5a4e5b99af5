-- The Platform relay's own store (SVC_RELAY_DATABASE_URL), migration table `relay_migrations`.
-- Orgs and their platform tokens (SHA-256 only), the routing table orchestrators register, the
-- durable buffer of deliveries no orchestrator could take, the delivery log, and a run index.
-- The relay never stores a signing secret: `relay_sources` holds routing and metadata only.

create table relay_orgs (
  org_id text primary key,
  token_sha256 bytea not null unique,
  created_at timestamptz not null default now(),
  token_rotated_at timestamptz
);

create table relay_sources (
  org_id text not null references relay_orgs (org_id) on delete cascade,
  routing_key text not null,
  provider_kind text not null,
  source_id text,
  max_payload_bytes integer,
  rate_limit_rpm integer,
  -- source.secrets metadata (never the secret): hmac | bearer | ip-allowlist | none
  signature_mode text,
  rotating boolean,
  registered_by text not null,
  updated_at timestamptz not null default now(),
  primary key (org_id, routing_key)
);

-- Deliveries answered `buffered`: a row is committed before the provider gets its 200, and is
-- deleted only after an orchestrator's definitive ack (or when it expires).
create table relay_buffer (
  id bigserial primary key,
  ref uuid not null unique,
  org_id text not null,
  routing_key text not null,
  provider_kind text not null,
  source_id text,
  delivery_id text not null,
  headers jsonb not null,
  body bytea not null,
  body_bytes integer not null,
  client_ip text not null,
  received_at timestamptz not null,
  expires_at timestamptz not null,
  attempts integer not null default 0
);
create index relay_buffer_org_order on relay_buffer (org_id, id);
create index relay_buffer_expiry on relay_buffer (expires_at);

create table relay_delivery_log (
  id bigserial primary key,
  org_id text not null,
  delivery_id text not null,
  routing_key text not null,
  -- expired | replayed_<ack result>
  outcome text not null,
  detail text,
  at timestamptz not null default now()
);
create index relay_delivery_log_org_at on relay_delivery_log (org_id, at);

-- Minimal run index from execution.status / job.status.forward (the orchestrator is authoritative).
create table relay_runs (
  org_id text not null,
  run_id text not null,
  workflow text not null,
  repository text not null,
  status text not null,
  updated_at timestamptz not null,
  primary key (org_id, run_id)
);

create table relay_jobs (
  org_id text not null,
  run_id text not null,
  job_id text not null,
  job text not null,
  status text not null,
  updated_at timestamptz not null,
  primary key (org_id, job_id)
);
create index relay_jobs_run on relay_jobs (org_id, run_id);
