// The billing subsystem: serves the public plan catalogue, `GET /api/v1/billing/plans`
// (catalogue.ts). No authentication: it names tiers, prices and limits, nothing of any tenant.
import { PlanCatalogue } from '../../../schemas/http/billing.ts';
import type { Subsystem } from '../context.ts';
import { planCatalogue } from './catalogue.ts';

export const BILLING_PLANS_PATH = '/api/v1/billing/plans';

export const billingSubsystem: Subsystem = {
  id: 'billing',
  async start(ctx) {
    ctx.http.get(BILLING_PLANS_PATH, { schema: { tags: ['public'], response: { 200: PlanCatalogue } } }, async (): Promise<PlanCatalogue> => planCatalogue(ctx.config));
  },
};
