-- Webhook ingest: sources, the delivery log, registrations, approval commands and the ingest
-- events outbox (range 0100-0199, see 0001_runs_and_jobs.sql).

-- A source is one forge connection of an org: a GitHub App, a git remote, a generic sender.
CREATE TABLE sources (
  id                     uuid PRIMARY KEY,
  org_id                 text NOT NULL,
  provider_kind          text NOT NULL,
  -- `<provider_kind>:<target id>` (`github:12345`, `git:<source uuid>`) or `generic:<source_id>`.
  routing_key            text NOT NULL,
  -- The path segment of a generic source's webhook URL; null for provider sources.
  source_id              text,
  name                   text NOT NULL,
  -- Non-secret settings, validated against the provider's sourceSettingsSchema.
  settings               jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- Sealed under the master key with additional data `source-secret:<id>`; two during rotation.
  secret_sealed          text,
  previous_secret_sealed text,
  -- Sealed JSON object of credentials (`source-credentials:<id>`), e.g. a GitHub App private key.
  credentials_sealed     text,
  -- Spec Versioning 4: the old value `reject` is stored as `ignore`.
  fork_policy            text NOT NULL DEFAULT 'run' CHECK (fork_policy IN ('run', 'ignore')),
  -- Two-axis allow policy for organization-wide workflows (repository patterns; empty = none).
  org_wide_workflow_repositories text[] NOT NULL DEFAULT '{}',
  org_wide_source_repositories   text[] NOT NULL DEFAULT '{}',
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, routing_key)
);
CREATE UNIQUE INDEX sources_generic_id ON sources (org_id, source_id) WHERE source_id IS NOT NULL;

-- The event log: one record per (org_id, delivery_id), upgraded in place (shed -> processed).
CREATE TABLE webhook_deliveries (
  org_id                 text NOT NULL,
  delivery_id            text NOT NULL,
  source_id              uuid,
  routing_key            text NOT NULL,
  provider_kind          text NOT NULL,
  status                 text NOT NULL CHECK (status IN (
                           'processing', 'matched', 'no_match', 'no_lock_file', 'duplicate', 'shed',
                           'rejected_signature', 'rejected_unknown_source', 'rejected_misconfigured',
                           'lockfile_corrupt', 'ignored_fork', 'skipped', 'approval_command')),
  shed_reason            text,
  message                text,
  event_type             text,
  action                 text,
  event_name             text,
  repository             text,
  ref                    text,
  sha                    text,
  sender                 text,
  trust_tier             text,
  workflow_modified      boolean NOT NULL DEFAULT false,
  run_ids                uuid[] NOT NULL DEFAULT '{}',
  steps                  jsonb NOT NULL DEFAULT '[]'::jsonb,
  payload_key            text,
  payload_bytes          integer,
  payload_omitted        boolean NOT NULL DEFAULT false,
  payload_omitted_reason text CHECK (payload_omitted_reason IN ('size_exceeded', 'storage_failed')),
  -- Times the same delivery id came back after it was processed (answered duplicate).
  duplicates             integer NOT NULL DEFAULT 0,
  -- Generic sources: processings of this id after its idempotency window had passed.
  generation             integer NOT NULL DEFAULT 0,
  attempts               integer NOT NULL DEFAULT 1,
  node_id                text,
  received_at            timestamptz NOT NULL DEFAULT now(),
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, delivery_id)
);
CREATE INDEX webhook_deliveries_org_created ON webhook_deliveries (org_id, created_at DESC);
CREATE INDEX webhook_deliveries_status ON webhook_deliveries (status, updated_at) WHERE status IN ('shed', 'processing');

-- Registrations (spec Delivery guarantees 6): registerable triggers of default-branch locks,
-- replaced per repository on each default-branch push.
CREATE TABLE registrations (
  id              uuid PRIMARY KEY,
  org_id          text NOT NULL,
  source_id       uuid NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
  repository      text NOT NULL,
  repository_id   text,
  clone_url       text,
  branch          text NOT NULL,
  sha             text NOT NULL,
  workflow        text NOT NULL,
  trigger_index   integer NOT NULL,
  trigger_type    text NOT NULL,
  -- Webhook trigger event names / custom event name, for the (org, event name) index.
  event_names     text[] NOT NULL DEFAULT '{}',
  -- True when the trigger lists repository patterns (organization-wide workflow).
  global          boolean NOT NULL DEFAULT false,
  trigger         jsonb NOT NULL,
  lock_entry      jsonb NOT NULL,
  lockfile_hash   text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX registrations_repository ON registrations (org_id, repository);
CREATE INDEX registrations_type ON registrations (trigger_type);
CREATE INDEX registrations_event_names ON registrations USING gin (event_names);
CREATE INDEX registrations_org_event ON registrations (org_id, trigger_type) ;
CREATE INDEX registrations_global ON registrations (org_id, trigger_type) WHERE global;

-- `/svc approve` and `/svc reject` comments, intercepted before matching; holds act on them.
CREATE TABLE approval_commands (
  id              uuid PRIMARY KEY,
  org_id          text NOT NULL,
  delivery_id     text NOT NULL,
  source_id       uuid,
  repository      text NOT NULL,
  pull_request    integer,
  command         text NOT NULL CHECK (command IN ('approve', 'reject')),
  argument        text NOT NULL DEFAULT '',
  author          text NOT NULL,
  processed_at    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (org_id, delivery_id)
);

-- Internal events the ingest emits (registration.updated), with a notification in the same
-- transaction; the events subsystem (0400 range) consumes them.
CREATE TABLE ingest_events (
  id          uuid PRIMARY KEY,
  org_id      text NOT NULL,
  name        text NOT NULL,
  payload     jsonb NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz
);
CREATE INDEX ingest_events_pending ON ingest_events (created_at) WHERE processed_at IS NULL;
