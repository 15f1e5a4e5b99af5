// Which tier each test file runs in (docs/testing.md). scripts/test-tiers.ts reads this list; the
// database harness reads BOTH_FLAVOURS. Globs are relative to the repository root (picomatch).
//
// - unit: in-process, no database, no child process (the runner enforces both: SVC_TEST_TIER=unit
//   makes a spawn or a database in such a file fail with the reason). Listed file by file: a new
//   file lands in integration, which allows everything a unit test does.
// - integration: every file not listed elsewhere: in-process servers on the run's PostgreSQL.
// - system: the shipped bins from dist/ on real sockets and processes, one file at a time, one
//   representative scenario per area; no coverage (nobody reads a child's).
// - full: what `npm test` leaves to `npm run test:full` (which also runs everything above, both
//   database flavours everywhere, the full fault volumes, the full browser flood and longer fuzz).

export const UNIT: readonly string[] = [
  'test/agent/job-env.test.ts',
  'test/agent/jobs/attest.test.ts',
  'test/agent/jobs/in-flight.test.ts',
  'test/agent/logs/masker.test.ts',
  'test/agent/runner/warm-type-stripper.test.ts',
  'test/agent/test-results/parse.test.ts',
  'test/architecture/pool-session-state.test.ts',
  'test/cli/dev/state.test.ts',
  'test/cli/remote-run/junit.test.ts',
  'test/core/cli/in-process.test.ts',
  'test/core/container-options.test.ts',
  'test/core/durations.test.ts',
  'test/core/error-codes.test.ts',
  'test/core/extension-points/storage-key.test.ts',
  'test/core/log-ring.test.ts',
  'test/core/logging.test.ts',
  'test/core/plugins/define-plugin.test.ts',
  'test/core/plugins/host.test.ts',
  'test/core/plugins/verify.test.ts',
  'test/core/plugins/version.test.ts',
  'test/core/remote-run-box.test.ts',
  'test/core/tracing/otlp-encode.test.ts',
  'test/core/tracing/settings.test.ts',
  'test/core/wiring/wiring.test.ts',
  'test/deploy/kubernetes-manifests.test.ts',
  'test/examples/kubernetes-manifests.test.ts',
  'test/kernel/orchestrator/dispatch/labels.test.ts',
  'test/kernel/orchestrator/ingest/message-regex.test.ts',
  'test/kernel/orchestrator/ingest/regex-guard.test.ts',
  'test/kernel/orchestrator/scaling/plan.test.ts',
  'test/kernel/relay/dashboard/ui-ansi.test.ts',
  'test/kernel/relay/dedup-window.test.ts',
  'test/kernel/relay/orchestrator-pool.test.ts',
  'test/kernel/services/config/load.test.ts',
  'test/kernel/services/config/redact.test.ts',
  'test/kernel/services/config/secret-paths.test.ts',
  'test/kernel/services/crypto/config-fields.test.ts',
  'test/kernel/services/crypto/hmac.test.ts',
  'test/kernel/services/crypto/master-keys.test.ts',
  'test/kernel/services/crypto/sealing.test.ts',
  'test/kernel/services/http/client-error.test.ts',
  'test/kernel/services/http/server.test.ts',
  'test/kernel/services/metrics.test.ts',
  'test/kernel/services/ws-liveness.test.ts',
  'test/kernel/services/ws-tick-writes.test.ts',
  'test/kernel/webhook/parse-request.test.ts',
  'test/kernel/webhook/rate-limiter.test.ts',
  'test/plugins/custody/der.test.ts',
  'test/plugins/providers/git/objects.test.ts',
  'test/plugins/providers/github/check-runs.test.ts',
  'test/plugins/providers/github/contract.test.ts',
  'test/plugins/providers/github/headers.test.ts',
  'test/plugins/providers/github/hook-deliveries.test.ts',
  'test/plugins/providers/github/provider.test.ts',
  'test/plugins/providers/github/read-file.test.ts',
  'test/plugins/providers/shared/github-payload.test.ts',
  'test/plugins/storage/filesystem.test.ts',
  'test/plugins/storage/filesystem/group-sync.test.ts',
  'test/plugins/storage/filesystem/routes.test.ts',
  'test/schemas/lock.test.ts',
  'test/schemas/validate.test.ts',
  'test/schemas/wire/concurrency-groups.test.ts',
  'test/sdk/builders.test.ts',
  'test/sdk/types.test.ts',
  'test/workflow/compile/lock-entry.test.ts',
  'test/workflow/compile/test-results.test.ts',
  'test/workflow/compile/retry.test.ts',
  'test/workflow/lock/lock-file.test.ts',
  'test/workflow/matching/compiled-locks.test.ts',
  'test/workflow/matching/event-details.test.ts',
  'test/workflow/matching/match-lock.test.ts',
  'test/workflow/matching/patterns.test.ts',
  'test/workflow/matching/registrations.test.ts',
  'test/workflow/matching/requirements.test.ts',
  'test/workflow/matching/trigger.test.ts',
];

/** One scenario per area, run against the shipped bins (`npm test`'s system tier). */
export const SYSTEM: readonly string[] = [
  'test/bin/**/*.test.ts',
  'test/e2e/ingest-git.test.ts', // ingest: a push to a bare repository through the relay to a green run
  'test/e2e/jobs-push.test.ts', // dispatch and jobs
  'test/e2e/step-approvals.test.ts', // run control
  'test/e2e/events-cluster.test.ts', // events and schedules
  'test/e2e/provenance.test.ts', // identity and provenance: live
  'test/e2e/artifacts-s3.test.ts', // artifacts on S3
  'test/e2e/dev.test.ts', // developer loop (svc dev, the embedded PostgreSQL)
  'test/e2e/containers.test.ts', // the image built with podman; relay, orchestrator and agent as containers, a push to a green run
  'test/e2e/dashboard-browser.test.ts', // dashboard in Chromium
  'test/faults/relay-kill.test.ts', // one fault scenario
];

/** The rest of the whole-system scenarios: `npm run test:full` only (docs/testing.md says where each area is checked). */
export const FULL_ONLY: readonly string[] = ['test/e2e/**/*.test.ts', 'test/faults/**/*.test.ts'];

/**
 * SQL-heavy files that run on both PostgreSQL flavours in `npm test` too: the database services and
 * migrations, and the ingest, dispatch, run-control and log-search queries.
 */
export const BOTH_FLAVOURS: readonly string[] = [
  'test/kernel/services/db/**/*.test.ts',
  'test/kernel/orchestrator/ingest/**/*.test.ts',
  'test/kernel/orchestrator/dispatch/**/*.test.ts',
  'test/kernel/orchestrator/run-control/**/*.test.ts',
  'test/kernel/orchestrator/log-search/**/*.test.ts',
];

/**
 * Files under a BOTH_FLAVOURS glob that run on the system flavour alone in `npm test` (both in
 * test:full): whole-flow scenarios whose SQL the folder's other files already run on both.
 */
export const BOTH_FLAVOURS_EXCEPT: readonly string[] = [
  // relay and orchestrator linked in-process; its approval SQL is run-control/approvals.test.ts's.
  'test/kernel/orchestrator/run-control/team-approvers.test.ts',
  // a real agent and step runners: its SQL (exit codes, retries, the protocol gap) is dispatch's other files'.
  'test/kernel/orchestrator/dispatch/retry-exit-codes.test.ts',
];
