// The Platform relay role.
export {
  startRelay,
  migrateRelay,
  RELAY_MIGRATIONS_DIR,
  RELAY_MIGRATIONS_TABLE,
  RELAY_EMBEDDED_DATABASE,
  ACK_TIMEOUT_MS,
  TOTAL_BUDGET_MS,
  DEDUP_WINDOW_MS,
  SEND_BUFFER_WATERMARK_BYTES,
  type StartRelayOptions,
  type Relay,
} from './app.ts';
export { provisionOrg, rotateOrgToken, listOrgs, orgForToken, hashPlatformToken, checkOrgId, ORG_ID_PATTERN, PLATFORM_TOKEN_PREFIX, type ProvisionedOrg, type OrgSummary } from './orgs.ts';
export { orderCandidates, realAckTimer, type AckTimer, type Candidate } from './orchestrator-pool.ts';
export { CONNECT_PATH } from './orchestrator-endpoint.ts';
export { MAX_WEBHOOK_BYTES } from '../webhook/parse-request.ts';
export { BUFFER_FULL_RETRY_AFTER_SECONDS } from './ingest-routes.ts';
