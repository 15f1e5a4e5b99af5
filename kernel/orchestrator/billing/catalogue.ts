// The self-hosted plan catalogue: an orchestrator run by its operator has one free tier,
// `self-hosted`, whose limits are the ones this code enforces. Each limit is read from the
// constant or config field the enforcing code uses, never written here a second time, so the
// catalogue cannot drift from behaviour. (A hosted service would serve its own catalogue.)
import type { SvcConfig } from '../../../schemas/config.ts';
import type { PlanCatalogue } from '../../../schemas/http/billing.ts';
import { MAX_WEBHOOK_BYTES } from '../../webhook/parse-request.ts';
import { MAX_EVENT_PAYLOAD_BYTES } from '../events/emit.ts';
import { TOKEN_LIFETIME_SECONDS } from '../identity/mint.ts';
import { RERUN_COOLDOWN_MS } from '../runs/api/rerun.ts';

export const SELF_HOSTED_CATALOGUE = 'self-hosted';

/**
 * The catalogue as this orchestrator serves it; config-driven limits are the running values.
 * `maxDispatchAttempts` is the cluster-wide setting when a cluster service is running, since that is what the event delivery loop reads.
 */
export function planCatalogue(config: SvcConfig, maxDispatchAttempts = config.cluster.maxDispatchAttempts): PlanCatalogue {
  return {
    catalogue: SELF_HOSTED_CATALOGUE,
    plans: [
      {
        id: 'self-hosted',
        name: 'Self-hosted',
        description: 'Everything this orchestrator does, on your own machines; limits are the ones it enforces.',
        price: { amount: 0, currency: 'USD', interval: 'month' },
        limits: {
          webhookBodyBytes: MAX_WEBHOOK_BYTES,
          eventPayloadBytes: MAX_EVENT_PAYLOAD_BYTES,
          eventLogPayloadBytes: config.eventLog.maxPayloadBytes,
          eventLogWarmRetentionDays: config.eventLog.warmRetentionDays,
          cacheTtlDays: config.cache.ttlDays,
          eventDispatchAttempts: maxDispatchAttempts,
          rerunCooldownSeconds: RERUN_COOLDOWN_MS / 1000,
          identityTokenLifetimeSeconds: TOKEN_LIFETIME_SECONDS,
        },
      },
    ],
  };
}
