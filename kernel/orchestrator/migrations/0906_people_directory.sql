-- The relay's people as the orchestrator needs them to decide team and role approvals from a
-- forge comment (`/svc approve`): the comment names a forge login, the relay's people store links
-- that login to a person with provider groups (teams) and org roles. The relay pushes the org's
-- people when an orchestrator connects and a person after each change (people.sync.request);
-- people are never deleted at the relay, only disabled. docs/run-control.md, "Teams and roles".
CREATE TABLE people_directory (
  org_id     text NOT NULL,
  person_id  text NOT NULL,
  name       text NOT NULL,
  -- The provider kind of the login (`github`: a forge login a comment author can be matched to).
  provider   text NOT NULL,
  login      text NOT NULL,
  teams      text[] NOT NULL DEFAULT '{}',
  roles      text[] NOT NULL DEFAULT '{}',
  disabled   boolean NOT NULL DEFAULT false,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, person_id)
);
CREATE INDEX people_directory_login ON people_directory (org_id, provider, lower(login));
