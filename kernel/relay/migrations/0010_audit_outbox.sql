-- The relay's own audit records (sign-in, sign-out, tokens, roles; docs/audit.md) wait here until
-- an orchestrator of their org has stored them (audit.record.request): the trail lives in the
-- orchestrator database, and a record must survive the relay restarting or no orchestrator being
-- connected. The row is written in the same transaction as the change it records.
create table relay_audit_outbox (
  id uuid primary key,
  org_id text not null,
  at timestamptz not null default clock_timestamp(),
  actor_kind text not null check (actor_kind in ('person', 'token', 'system')),
  actor_id text not null default '',
  actor_name text not null,
  action text not null,
  target text not null default '',
  outcome text not null check (outcome in ('ok', 'refused', 'failed')),
  detail text not null default ''
);
create index relay_audit_outbox_org on relay_audit_outbox (org_id, at);

-- People whose entry in the orchestrators' people directory must be sent again (a sign-in, a role
-- or group change, a person disabled); the org's whole directory is sent when an orchestrator connects.
create table relay_people_sync_pending (
  person_id uuid not null,
  queued_at timestamptz not null default now(),
  primary key (person_id)
);
