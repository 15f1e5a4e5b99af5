// `svc-admin cluster-settings set --max-dispatch-attempts <n> --sealed-secrets-retry-backoff-ms <ms>
// [--json]`: changes the cluster-wide settings in the database (docs/cluster.md); every running
// orchestrator applies the change at once (NOTIFY), no restart. Values are range-checked by the
// same schema as PATCH /api/v1/admin/cluster-settings; a refused value changes nothing.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { CLUSTER_SETTING_BOUNDS, ClusterSettingsPatch, type ClusterSettings } from '../../../schemas/http/settings.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';
import { patchClusterSettings } from '../../../kernel/orchestrator/cluster/settings.ts';
import { adminConfig, databaseFlag, databaseUrl, withDatabase } from '../source/shared.ts';
import { describeClusterSettings, seedOf } from './shared.ts';

const patchCheck = compileSchema(ClusterSettingsPatch);
const range = (b: { minimum: number; maximum: number }) => `${b.minimum}-${b.maximum}`;

export default class ClusterSettingsSet extends SvcCommand {
  static override description = 'Change cluster-wide settings; every running orchestrator applies them without a restart';
  static override examples = [
    '<%= config.bin %> cluster-settings set --sealed-secrets-retry-backoff-ms 30000',
    '<%= config.bin %> cluster-settings set --max-dispatch-attempts 3 --json',
  ];
  static override flags = {
    ...databaseFlag,
    'max-dispatch-attempts': Flags.integer({ description: `attempts a job or an internal event delivery gets before it fails (${range(CLUSTER_SETTING_BOUNDS.maxDispatchAttempts)})` }),
    'sealed-secrets-retry-backoff-ms': Flags.integer({
      description: `wait before a job whose sealed secrets a node cannot open is dispatched again, in ms (${range(CLUSTER_SETTING_BOUNDS.sealedSecretsRetryBackoffMs)})`,
    }),
  };

  async run(): Promise<ClusterSettings> {
    const { flags } = await this.parse(ClusterSettingsSet);
    const patch: Record<string, number> = {};
    if (flags['max-dispatch-attempts'] !== undefined) patch['maxDispatchAttempts'] = flags['max-dispatch-attempts'];
    if (flags['sealed-secrets-retry-backoff-ms'] !== undefined) patch['sealedSecretsRetryBackoffMs'] = flags['sealed-secrets-retry-backoff-ms'];
    if (Object.keys(patch).length === 0) throw new InputError(USAGE_ERROR_CODE, 'name a setting to change: --max-dispatch-attempts or --sealed-secrets-retry-backoff-ms');
    const checked = patchCheck.validate(patch);
    if (!checked.ok) throw new InputError('SVC_ERR_CLUSTER_SETTINGS_INVALID', `cluster settings not changed: ${formatIssues(checked.issues)}`);
    const config = await adminConfig();
    const settings = await withDatabase(databaseUrl(config, flags['database-url']), (pool) => patchClusterSettings(pool, checked.value, seedOf(config), `svc-admin (${process.env['USER'] ?? 'unknown user'})`));
    if (!this.jsonEnabled()) this.log(describeClusterSettings(settings));
    return settings;
  }
}
