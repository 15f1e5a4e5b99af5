// The two oclif CLIs of the package.
import type { CliDefinition } from './run-oclif.ts';

export const SVC_CLI: CliDefinition = {
  bin: 'svc',
  description: 'svc developer CLI: author, compile, preview and run CI workflows',
  commandsModule: 'cli/commands',
  topics: {
    fixture: 'Test fixtures in .svc/tests/*.ts (the events `svc run remote` runs): list them, show one',
    hook: 'Git hooks: a pre-commit hook that keeps the lock compiled, and the post-receive hook a git server uses to send pushes',
    logs: "Search the stored logs of the org's runs through the Platform",
    org: 'Which org the Platform commands act on',
    pat: 'Your own personal access tokens on the Platform: create (the value is shown once), list and revoke',
    run: "Run workflows: `svc run <event> --local` on this machine, `svc run remote` on the orchestrator's agents with your uncommitted changes",
    runs: 'Inspect runs through the Platform: recent runs, details, logs and artifacts',
    secrets: 'Secrets of the org through the Platform: list names and contexts (never values), set test-context secrets',
    tests: "Test results through the Platform: a run's tests, recent failures, flaky tests, one test's history, the quarantine",
    'tests:quarantine': 'Quarantined tests of the org or a repository (their failures do not fail a job): add with a reason, remove, list',
  },
};

export const SVC_ADMIN_CLI: CliDefinition = {
  bin: 'svc-admin',
  description: 'svc operator CLI: provision, inspect and maintain an installation',
  commandsModule: 'admin-cli/commands',
  topics: {
    'admin-token': 'Admin tokens for the orchestrator admin API: create (scoped or unrestricted), list and revoke',
    'agent-token': 'Agent tokens: create, list and revoke the credentials agents connect with',
    approvals: 'Approval holds of runs: list them with their votes, approve or reject as an operator',
    attestations: 'Provenance attestations: list them, print a signed bundle, sign pending statements now (offline-backfill)',
    audit: 'The audit trail: who changed what and when, with the outcome; list with filters, as JSON lines',
    cache: 'Source, dependency and user caches: list and purge',
    cluster: 'The orchestrator nodes sharing the database: which are alive and which leads',
    'cluster-settings': 'Settings every orchestrator of the cluster follows (attempt limit, sealed-secrets retry back-off): show and set, applied without a restart',
    config: 'Shared config versions: show, set, history, rollback, export (--redacted), and reload a running orchestrator',
    context: 'Secret contexts: create them, bind them to repositories or orgs, set their protection rules',
    deliveries: 'The webhook event log: delivery records, their outcomes and pipeline steps',
    'event-dlq': 'The dead-letter queue of internal events: list, count, retry, discard',
    'forge-status': 'Run status reported back to the forge (check runs, run-status webhooks): deliveries and their attempts',
    'org-settings': "An org's trust policy (the fork policy default of its sources): show and set",
    plugin: 'Plugins: check that a module signs in without starting a server',
    relay: 'The Platform relay: orgs, their tokens, personal access tokens and the roles of people',
    'relay:org': 'Orgs at the relay and their platform tokens',
    'relay:org:token': "An org's platform token",
    'relay:pat': 'Personal access tokens for the developer CLI',
    'relay:role': "People's roles in an org (viewer, developer, approver, admin): grant, revoke, list",
    runs: 'Runs in the orchestrator database: list, show, and their stored logs (one job, one step: --step=-1 is the last)',
    secret: 'Secrets of a context: set and list keys (values are never printed)',
    'signing-key': 'Provenance signing keys: generate, list, rotate, retire, revoke, export the trust root',
    source: 'Webhook sources: add, list, remove, rotate secrets, run-status webhooks, purge stale ones',
    'source:status-webhook': 'The signed run-status webhook of a source: set, remove, list',
  },
};

export const CLI_DEFINITIONS: readonly CliDefinition[] = [SVC_CLI, SVC_ADMIN_CLI];
