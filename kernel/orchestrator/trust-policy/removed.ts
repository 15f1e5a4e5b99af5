// Trust-policy values removed in the 0.9 line (spec "Versioning" 4). A body still carrying one
// is refused with 400 naming the field and what replaced it, before schema validation (whose
// "unknown field" would not say what to do instead). Nothing is written.
import { InputError } from '../../../core/errors.ts';

const MEMBER_OVERRIDES =
  'per-member trust overrides were removed in 0.9: a run\'s trust comes from its event (pushes and same-repository pull requests are trusted, fork pull requests unknown). To let chosen people release a fork\'s run use a secret context\'s required reviewers (svc-admin context protect) or /svc approve on the pull request';
const DASHBOARD_WRITE =
  'boolean dashboard-write policy values were removed in 0.9: dashboard actions (re-run, cancel) reach the orchestrator through the Platform, which decides who may take them; the trust policy has no dashboard-write setting';
const TRUST_TIERS =
  'the trust tiers were reduced to trusted and unknown in 0.9 and are not set by policy: the trust step derives them from the event; what each tier may reach is set per secret context (minTrust trusted or any)';

/** Field names of removed policy entries (any spelling seen in older clients) → what replaced them. */
const REMOVED_FIELDS: Readonly<Record<string, string>> = {
  memberOverrides: MEMBER_OVERRIDES,
  memberTrustOverrides: MEMBER_OVERRIDES,
  perMemberOverrides: MEMBER_OVERRIDES,
  trustOverrides: MEMBER_OVERRIDES,
  members: MEMBER_OVERRIDES,
  dashboardWrite: DASHBOARD_WRITE,
  dashboardWrites: DASHBOARD_WRITE,
  allowDashboardWrite: DASHBOARD_WRITE,
  dashboardWritePolicy: DASHBOARD_WRITE,
  trustTier: TRUST_TIERS,
  trustTiers: TRUST_TIERS,
  defaultTrustTier: TRUST_TIERS,
  tiers: TRUST_TIERS,
};

/** Throws SVC_ERR_TRUST_POLICY_FIELD_REMOVED for the first removed field or value in `body`. */
export function refuseRemovedPolicyFields(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const record = body as Record<string, unknown>;
  for (const [field, replacement] of Object.entries(REMOVED_FIELDS)) {
    if (Object.hasOwn(record, field)) {
      throw new InputError('SVC_ERR_TRUST_POLICY_FIELD_REMOVED', `trust policy field "${field}" was removed: ${replacement}; nothing was changed`, { details: { field } });
    }
  }
  if (record['forkPolicy'] === 'reject') {
    throw new InputError(
      'SVC_ERR_TRUST_POLICY_FIELD_REMOVED',
      'trust policy value "forkPolicy": "reject" was removed in 0.9: use "ignore" (fork pull requests are recorded and start nothing; stored reject values became ignore); nothing was changed',
      { details: { field: 'forkPolicy', value: 'reject' } },
    );
  }
}
