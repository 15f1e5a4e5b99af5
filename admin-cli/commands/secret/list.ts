// `svc-admin secret list <context>`: the context's secret keys and when each was set; never values.
import { Args } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { getContext, listSecretKeys, type SecretKeyInfo } from '../../../kernel/orchestrator/secrets/index.ts';
import { adminConfig, databaseFlag, databaseUrlOf, warnIfUnbound, withDatabase } from '../context/shared.ts';

export default class SecretList extends SvcCommand {
  static override description = "List a context's secret keys (never their values)";
  static override args = { context: Args.string({ required: true, description: 'context name' }) };
  static override flags = { ...databaseFlag };

  async run(): Promise<{ context: string; keys: SecretKeyInfo[] }> {
    const { args, flags } = await this.parse(SecretList);
    const config = await adminConfig();
    const keys = await withDatabase(databaseUrlOf(config, flags['database-url']), async (pool) => {
      const context = await getContext(pool, args.context);
      const listed = await listSecretKeys(pool, args.context);
      warnIfUnbound(context);
      return listed;
    });
    if (!this.jsonEnabled()) {
      if (keys.length === 0) this.log(`context ${args.context} has no secrets`);
      for (const k of keys) this.log(`${k.key}  ${k.updatedAt}`);
    }
    return { context: args.context, keys };
  }
}
