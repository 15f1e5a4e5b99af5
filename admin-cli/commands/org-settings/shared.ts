// Helpers of the `svc-admin org-settings` commands.
import type { TrustPolicy } from '../../../schemas/http/settings.ts';

export function describeTrustPolicy(p: TrustPolicy): string {
  return [
    `org         ${p.org}`,
    `forkPolicy  ${p.forkPolicy ?? '(not set)'}  → sources without their own fork policy: ${p.effective.forkPolicy}`,
    p.updatedAt === null ? 'never changed (the default policy)' : `updated ${p.updatedAt} by ${p.updatedBy ?? ''}`,
  ].join('\n');
}
