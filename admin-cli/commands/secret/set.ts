// `svc-admin secret set <context> <key> [--value <v> | --value-file <f>]`: stores one secret,
// sealed with the master key (AES-256-GCM, additional data `secret:<context>:<key>`). Without
// --value or --value-file the value is read from standard input. One trailing newline of a
// file or of stdin is dropped. The value is never printed or logged.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { readSecretValue } from '../../../core/cli/secret-value.ts';
import { getContext, MAX_SECRET_BYTES, setSecret } from '../../../kernel/orchestrator/secrets/index.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, warnIfUnbound, withDatabase } from '../context/shared.ts';
import { audited } from '../audit/shared.ts';

export default class SecretSet extends SvcCommand {
  static override description = 'Set one secret of a context (value from --value, --value-file or standard input; never printed)';
  static override examples = ['printf %s "$TOKEN" | <%= config.bin %> secret set deploy NPM_TOKEN', '<%= config.bin %> secret set deploy KEY --value-file key.txt'];
  static override args = {
    context: Args.string({ required: true, description: 'context name' }),
    key: Args.string({ required: true, description: 'secret key (letters, digits, "_")' }),
  };
  static override flags = {
    ...databaseFlag,
    value: Flags.string({ description: 'the value (visible in the process list and shell history: prefer --value-file or stdin)', exclusive: ['value-file'] }),
    'value-file': Flags.string({ description: 'read the value from this file', exclusive: ['value'] }),
  };

  async run(): Promise<{ context: string; key: string; replaced: boolean }> {
    const { args, flags } = await this.parse(SecretSet);
    const value = await readSecretValue(flags, { maxBytes: MAX_SECRET_BYTES, dashReadsStdin: false });
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const result = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'secret.set', target: `secret:${args.context}/${args.key}`, detail: (r) => (r.replaced ? 'replaced' : 'set') }, async () => {
        const context = await getContext(pool, args.context);
        const set = await setSecret(pool, keys.current as Buffer, args.context, args.key, value);
        warnIfUnbound(context);
        return set;
      }),
    );
    if (!this.jsonEnabled()) this.log(`${result.replaced ? 'Replaced' : 'Set'} secret ${args.context}:${args.key}.`);
    return { context: args.context, key: args.key, replaced: result.replaced };
  }
}
