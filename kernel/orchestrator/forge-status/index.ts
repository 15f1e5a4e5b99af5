// Forge status (docs/forge-status.md): run status reported back to the forge. Public API:
//   forgeStatusSubsystem / createForgeStatusSubsystem   the reporter: feed → deliveries → senders
//   setStatusWebhook / removeStatusWebhook / listStatusWebhooks   run-status webhooks per source
//   statusWebhookSecretsSealedStore                     their secrets under the master key (sealed-stores.ts)
//   checkStatusWebhookUrl                               the URL check applied when one is set
//   listForgeStatus / getForgeStatus                    deliveries and their attempts (operators)
//   reportedState                                       run status → forge state and conclusion
export { statusWebhookSecretsSealedStore } from './sealed-store.ts';
export { createForgeStatusSubsystem, forgeStatusSubsystem, type ForgeStatusTuning } from './subsystem.ts';
export {
  checkStatusWebhookUrl,
  listStatusWebhooks,
  MIN_STATUS_WEBHOOK_SECRET_LENGTH,
  removeStatusWebhook,
  setStatusWebhook,
  type StatusWebhookSummary,
} from './webhook-config.ts';
export {
  checkForgeStatusFilter,
  DEFAULT_FORGE_STATUS_LIMIT,
  getForgeStatus,
  listForgeStatus,
  MAX_FORGE_STATUS_LIMIT,
  type ForgeStatusFilter,
} from './store.ts';
export { reportedState, type ReportedState } from './state.ts';
export { signedRequest, webhookPayload } from './webhook-send.ts';
