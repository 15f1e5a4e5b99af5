// `svc-admin org-settings show --org <org> [--json]`: an organization's trust policy
// (docs/trust-policy.md), as stored and as the trust step applies it.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import type { TrustPolicy } from '../../../schemas/http/settings.ts';
import { getTrustPolicy } from '../../../kernel/orchestrator/trust-policy/store.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';
import { describeTrustPolicy } from './shared.ts';
import { checkOrg } from './set.ts';

export default class OrgSettingsShow extends SvcCommand {
  static override description = "Show an org's trust policy (fork policy default for its sources)";
  static override flags = { ...databaseFlag, org: Flags.string({ required: true, description: 'org id' }) };

  async run(): Promise<TrustPolicy> {
    const { flags } = await this.parse(OrgSettingsShow);
    const org = checkOrg(flags.org);
    const config = await adminConfig();
    const policy = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => getTrustPolicy(pool, org));
    if (!this.jsonEnabled()) this.log(describeTrustPolicy(policy));
    return policy;
  }
}
