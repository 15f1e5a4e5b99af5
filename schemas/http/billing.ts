// `GET /api/v1/billing/plans` (public): the plan catalogue, tiers with their prices and limits.
import { Type, type Static } from 'typebox';

const strict = { additionalProperties: false } as const;
const Count = Type.Integer({ minimum: 0 });

/** The limits a plan grants; each is what the serving orchestrator enforces. */
export const PlanLimits = Type.Object(
  {
    /** Largest webhook body accepted (413 above). */
    webhookBodyBytes: Count,
    /** Largest `ctx.emit` payload. */
    eventPayloadBytes: Count,
    /** Largest webhook payload kept in the event log (`eventLog.maxPayloadBytes`). */
    eventLogPayloadBytes: Count,
    /** Days event-log records stay warm before they are archived (`eventLog.warmRetentionDays`). */
    eventLogWarmRetentionDays: Count,
    /** Days a cache entry lives unread (`cache.ttlDays`). */
    cacheTtlDays: Count,
    /** Attempts to deliver an internal event before it is dead-lettered (`cluster.maxDispatchAttempts`). */
    eventDispatchAttempts: Count,
    /** Seconds between two re-runs of the same run (429 sooner). */
    rerunCooldownSeconds: Count,
    /** Lifetime of an identity token, in seconds. */
    identityTokenLifetimeSeconds: Count,
  },
  strict,
);
export type PlanLimits = Static<typeof PlanLimits>;

export const PlanPrice = Type.Object(
  {
    /** In the currency's minor unit (cents); 0 is free. */
    amount: Count,
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    interval: Type.Enum(['month', 'year']),
  },
  strict,
);
export type PlanPrice = Static<typeof PlanPrice>;

export const Plan = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z][a-z0-9-]*$' }),
    name: Type.String({ minLength: 1 }),
    description: Type.String(),
    price: PlanPrice,
    limits: PlanLimits,
  },
  strict,
);
export type Plan = Static<typeof Plan>;

export const PlanCatalogue = Type.Object(
  {
    /** Which catalogue this is: `self-hosted` for an orchestrator run by its operator. */
    catalogue: Type.String(),
    plans: Type.Array(Plan),
  },
  strict,
);
export type PlanCatalogue = Static<typeof PlanCatalogue>;
