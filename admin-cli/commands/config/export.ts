// `svc-admin config export [--redacted] [--json]`: the newest shared config version's document
// (before the first version: the shared fields of the config this command sees), as YAML that
// `svc-admin config set --file` takes back. Without --redacted it holds the secrets in plain text.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { sharedFieldsOf } from '../../../kernel/orchestrator/config/fields.ts';
import { latestConfigVersion } from '../../../kernel/orchestrator/config/versions.ts';
import { redactConfig } from '../../../kernel/services/config/index.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, documentText, withDatabase } from './shared.ts';

export default class ConfigExport extends SvcCommand {
  static override description = 'Export the shared config (newest version) as YAML; --redacted replaces the secrets with ***REDACTED***';
  static override flags = {
    ...databaseFlag,
    redacted: Flags.boolean({ description: 'replace platform.token, secrets.key, secrets.bootstrapAdminToken and cluster.joinToken with ***REDACTED***', default: false }),
  };

  async run(): Promise<{ version: number | null; redacted: boolean; config: Record<string, unknown> }> {
    const { flags } = await this.parse(ConfigExport);
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const latest = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => latestConfigVersion(pool, keys.all));
    const document = latest === undefined ? sharedFieldsOf(config) : latest.config;
    const shown = flags.redacted ? redactConfig(document) : document;
    if (!this.jsonEnabled()) {
      this.log(`# ${latest === undefined ? 'no config version yet: the shared fields of this command\'s own config' : `shared config version ${latest.summary.version}`}${flags.redacted ? ' (redacted)' : ''}`);
      this.log(documentText(shown));
    }
    return { version: latest?.summary.version ?? null, redacted: flags.redacted, config: shown };
  }
}
