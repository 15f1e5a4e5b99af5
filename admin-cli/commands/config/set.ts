// `svc-admin config set [path=value …] [--file <yaml|json>] [--description] [--json]` writes a
// new shared config version; every node reloads it. `--file` gives the whole document (as
// `config export` prints it); `path=value` pairs change single fields of the newest version (or
// of the file). `--seed` writes the first version from the shared fields of the config this
// command sees (its SVC_* environment and SVC_CONFIG_FILE, as the node reads them).
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { ConflictError, InputError } from '../../../core/errors.ts';
import { sharedFieldsOf } from '../../../kernel/orchestrator/config/fields.ts';
import { latestConfigVersion, writeConfigVersion } from '../../../kernel/orchestrator/config/versions.ts';
import type { ConfigVersionSummary } from '../../../schemas/http/config.ts';
import { adminConfig, adminMasterKeys, applyPair, databaseFlag, databaseUrlOf, readDocumentFile, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class ConfigSet extends SvcCommand {
  static override description = 'Write a new shared config version from a file, path=value pairs, or (--seed) the running config; every node reloads it';
  static override examples = [
    '<%= config.bin %> config set --seed',
    '<%= config.bin %> config set queue.maxDepth=500 agentAuth=token --description "smaller queue"',
    '<%= config.bin %> config set --file shared.yaml',
  ];
  static override strict = false;
  static override flags = {
    ...databaseFlag,
    file: Flags.string({ description: 'YAML or JSON file with the whole shared document (replaces the newest version\'s content)', exclusive: ['seed'] }),
    seed: Flags.boolean({ description: 'write the first version from the shared fields of this command\'s own config (created_by cli:seed)', default: false }),
    description: Flags.string({ description: 'why (shown by "config history")' }),
  };

  async run(): Promise<ConfigVersionSummary> {
    const { flags, argv } = await this.parse(ConfigSet);
    const pairs = argv as string[];
    if (flags.seed && pairs.length > 0) throw new InputError(USAGE_ERROR_CODE, '--seed takes no path=value pairs: seed first, then set');
    if (!flags.seed && flags.file === undefined && pairs.length === 0) {
      throw new InputError(USAGE_ERROR_CODE, 'give path=value pairs, --file <yaml|json> or --seed (see "svc-admin config set --help")');
    }
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const fromFile = flags.file === undefined ? undefined : await readDocumentFile(flags.file);
    const written = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'config.set', target: 'config', detail: (v) => `version ${v.version}${pairs.length > 0 ? `: ${pairs.map((p) => p.split('=')[0]).join(', ')}` : ''}` }, () => this.write(pool, keys, config, flags, pairs, fromFile)),
    );
    if (!this.jsonEnabled()) {
      const sealed = written.encryptedPaths.length > 0 ? ` (sealed: ${written.encryptedPaths.join(', ')})` : '';
      this.log(`wrote config version ${written.version}${sealed}; every node reloads it`);
    }
    return written;
  }

  private async write(
    pool: Parameters<Parameters<typeof withDatabase>[1]>[0],
    keys: Awaited<ReturnType<typeof adminMasterKeys>>,
    config: Awaited<ReturnType<typeof adminConfig>>,
    flags: { seed: boolean; description?: string | undefined },
    pairs: string[],
    fromFile: Awaited<ReturnType<typeof readDocumentFile>> | undefined,
  ): Promise<ConfigVersionSummary> {
    {
      const latest = await latestConfigVersion(pool, keys.all);
      if (flags.seed) {
        if (latest !== undefined) throw new ConflictError('SVC_ERR_CONFIG_ALREADY_SEEDED', `config version ${latest.summary.version} exists already; change it with "svc-admin config set path=value" or --file`);
        return writeConfigVersion(pool, keys.current as Buffer, { config: sharedFieldsOf(config), createdBy: 'cli:seed', description: flags.description ?? 'seeded from the running config' });
      }
      const document = structuredClone(fromFile ?? latest?.config ?? {});
      for (const pair of pairs) applyPair(document, pair);
      return writeConfigVersion(pool, keys.current as Buffer, { config: document, createdBy: 'cli:set', description: flags.description });
    }
  }
}
