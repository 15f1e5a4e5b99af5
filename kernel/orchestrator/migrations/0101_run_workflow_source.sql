-- Ingest additions to the core run and job rows.
-- Organization-wide workflows: the source (and clone address) of the repository that defines
-- the workflow, so dispatch can mint `workflowAuth` next to `sourceAuth`.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS workflow_source_id uuid;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS workflow_clone_url text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS workflow_modified boolean NOT NULL DEFAULT false;
-- A job waiting for a coalesced build (`contentHash:lockfileHash`), possibly owned by another
-- run: when that build job finishes, dispatch releases (or skips) every job waiting on its key.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS waits_for_build text;
CREATE INDEX IF NOT EXISTS jobs_waits_for_build ON jobs (org_id, waits_for_build) WHERE waits_for_build IS NOT NULL AND status = 'waiting';
