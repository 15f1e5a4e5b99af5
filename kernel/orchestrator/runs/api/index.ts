// Runs API: what the relay forwards to the orchestrator for the dashboard and `svc runs`:
// run detail, logs after a cursor, re-run, cancel, original payload.
//
// Public API:
//   relayRequestHandler(ctx, ingestPipeline)         → (message, send): the relay link's onMessage
//   answerDashboardRequest(deps, request)            one request → its response (never rejects)
//   loadRunView(pool, orgId, runId)                  run detail (RunView)
//   loadRunDetail(pool, trust, orgId, runId)         job outputs, re-run lineage, attestations with verdicts (RunDetail)
//   readRunAttestationBundle(pool, orgId, runId, id) → { fileName, bundle } of one signed attestation
//   readLogPage(pool, orgId, runId, after?)          log lines after a cursor (RunLogsPage)
//   rerunRun(deps, { orgId, runId, triggeredBy })    → { newRunId } (RerunCooldownError inside 5 s)
//   readRunPayload(pool, storage, orgId, runId)      → { payload }
export { relayRequestHandler, answerDashboardRequest, runsApiDeps, encodeResponse, isDashboardRequest, MAX_RESPONSE_BYTES, type RunsApiDeps, type IngestParts, type RelayRequestHandler } from './relay-handlers.ts';
export { loadRunView, findRun, checkRunId, TERMINAL_RUN_STATUSES } from './show.ts';
export { loadRunDetail, jobOutputsOf, lineageOf } from './detail.ts';
export { listRunAttestations, readRunAttestationBundle, verificationOf, type AttestationTrust } from './attestations.ts';
export { readLogPage, decodeCursor, encodeCursor, LOG_PAGE_BYTES, type CursorEntry } from './logs.ts';
export { rerunRun, RerunCooldownError, RERUN_COOLDOWN_MS, RERUN_COOLDOWN_CODE, type RerunDeps, type RerunRequest } from './rerun.ts';
export { readRunPayload, MAX_RELAYED_PAYLOAD_BYTES } from './payload.ts';
