// `svc-admin config rollback <version> [--description] [--json]`: a new version copying the
// content of an older one (versions never change); every node reloads it.
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';
import { rollbackConfigVersion } from '../../../kernel/orchestrator/config/versions.ts';
import type { ConfigVersionSummary } from '../../../schemas/http/config.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class ConfigRollback extends SvcCommand {
  static override description = 'Roll the shared config back: write a new version copying an older version\'s content (every node reloads it)';
  static override args = { version: Args.string({ required: true, description: 'the version to copy' }) };
  static override flags = {
    ...databaseFlag,
    description: Flags.string({ description: 'why (default: "rollback to version N")' }),
  };

  async run(): Promise<ConfigVersionSummary> {
    const { args, flags } = await this.parse(ConfigRollback);
    if (!/^[1-9]\d{0,9}$/.test(args.version)) throw new InputError(USAGE_ERROR_CODE, `"${args.version}" is not a version number (see "svc-admin config history")`);
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const written = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'config.rollback', target: `config:version ${args.version}`, detail: (v) => `new version ${v.version}` }, () =>
        rollbackConfigVersion(pool, keys.all, Number(args.version), 'cli:rollback', flags.description),
      ),
    );
    if (!this.jsonEnabled()) this.log(`wrote version ${written.version} (a copy of version ${args.version}); every node reloads it`);
    return written;
  }
}
