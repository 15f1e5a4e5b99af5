// The billing subsystem: serves the public plan catalogue, `GET /api/v1/billing/plans`
// (catalogue.ts). No authentication: it names tiers, prices and limits, nothing of any tenant.
import { PlanCatalogue } from '../../../schemas/http/billing.ts';
import type { Subsystem } from '../context.ts';
import { clusterServiceRef } from '../service-refs.ts';
import { planCatalogue } from './catalogue.ts';

export const BILLING_PLANS_PATH = '/api/v1/billing/plans';

export const billingSubsystem: Subsystem = {
  id: 'billing',
  // The cluster-wide dispatch attempts, when a cluster runs.
  optionalNeeds: [clusterServiceRef],
  async start(ctx, deps) {
    const cluster = deps.getOptional(clusterServiceRef);
    ctx.http.get(BILLING_PLANS_PATH, { schema: { tags: ['public'], response: { 200: PlanCatalogue } } }, async (): Promise<PlanCatalogue> =>
      planCatalogue(ctx.config, cluster?.settings.current().maxDispatchAttempts),
    );
  },
};
