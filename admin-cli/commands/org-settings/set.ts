// `svc-admin org-settings set --org <org> --fork-policy run|ignore|unset [--json]`: changes an
// organization's trust policy (docs/trust-policy.md); every node's ingest applies it at once
// (NOTIFY). Removed values (fork policy reject) are refused with what replaced them, as by
// PATCH /trust-policy; a refusal changes nothing.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { OrgId, TrustPolicyPatch, type TrustPolicy } from '../../../schemas/http/settings.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { refuseRemovedPolicyFields } from '../../../kernel/orchestrator/trust-policy/removed.ts';
import { patchTrustPolicy } from '../../../kernel/orchestrator/trust-policy/store.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';
import { describeTrustPolicy } from './shared.ts';

const patchCheck = compileSchema(TrustPolicyPatch);
const orgCheck = compileSchema(OrgId);

export function checkOrg(org: string): string {
  if (orgCheck.check(org)) return org;
  throw new InputError('SVC_ERR_TRUST_POLICY_ORG', `org id "${String(org).slice(0, 100)}" is not valid: use 1-100 letters, digits, ".", "_" or "-"`);
}

export default class OrgSettingsSet extends SvcCommand {
  static override description = "Change an org's trust policy; every running orchestrator applies it without a restart";
  static override examples = ['<%= config.bin %> org-settings set --org acme --fork-policy ignore', '<%= config.bin %> org-settings set --org acme --fork-policy unset --json'];
  static override flags = {
    ...databaseFlag,
    org: Flags.string({ required: true, description: 'org id' }),
    'fork-policy': Flags.string({ description: 'run or ignore fork pull requests for sources without their own fork policy; unset clears it (default run)' }),
  };

  async run(): Promise<TrustPolicy> {
    const { flags } = await this.parse(OrgSettingsSet);
    const org = checkOrg(flags.org);
    if (flags['fork-policy'] === undefined) throw new InputError(USAGE_ERROR_CODE, 'name a setting to change: --fork-policy run|ignore|unset');
    const patch = { forkPolicy: flags['fork-policy'] === 'unset' ? null : flags['fork-policy'] };
    refuseRemovedPolicyFields(patch);
    const checked = patchCheck.validate(patch);
    if (!checked.ok) throw new InputError('SVC_ERR_TRUST_POLICY_INVALID', `trust policy of ${org} not changed: ${formatIssues(checked.issues)} (--fork-policy takes run, ignore or unset)`);
    const config = await adminConfig();
    const policy = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => patchTrustPolicy(pool, org, checked.value, `svc-admin (${process.env['USER'] ?? 'unknown user'})`));
    if (!this.jsonEnabled()) this.log(describeTrustPolicy(policy));
    return policy;
  }
}
