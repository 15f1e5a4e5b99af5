// `svc-admin config show [--version N] [--json]`: one shared config version (the newest by
// default), secrets redacted. Reads the orchestrator database.
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { NotFoundError } from '../../../core/errors.ts';
import { latestConfigVersion, readConfigVersion } from '../../../kernel/orchestrator/config/versions.ts';
import { redactConfig } from '../../../kernel/services/config/index.ts';
import type { ConfigVersionDetail } from '../../../schemas/http/config.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, documentText, withDatabase } from './shared.ts';

export default class ConfigShow extends SvcCommand {
  static override description = 'Show a shared config version (default: the newest, the one every node runs), secrets redacted';
  static override flags = {
    ...databaseFlag,
    version: Flags.integer({ description: 'version number (see "svc-admin config history")', min: 1 }),
  };

  async run(): Promise<ConfigVersionDetail | { version: null }> {
    const { flags } = await this.parse(ConfigShow);
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const found = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      flags.version === undefined ? latestConfigVersion(pool, keys.all) : readConfigVersion(pool, keys.all, flags.version),
    );
    if (found === undefined) {
      if (flags.version !== undefined) throw new NotFoundError('SVC_ERR_CONFIG_VERSION_NOT_FOUND', `there is no config version ${flags.version}; list them with "svc-admin config history"`);
      if (!this.jsonEnabled()) this.log('no shared config version yet: nodes run on their local config; seed one with "svc-admin config set --seed"');
      return { version: null };
    }
    const detail: ConfigVersionDetail = { ...found.summary, config: redactConfig(found.config) };
    if (!this.jsonEnabled()) {
      this.log(`version ${detail.version}  ${detail.createdAt}  by ${detail.createdBy}${detail.description ? `  "${detail.description}"` : ''}`);
      this.log(documentText(detail.config));
    }
    return detail;
  }
}
