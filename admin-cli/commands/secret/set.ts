// `svc-admin secret set <context> <key> [--value <v> | --value-file <f>]`: stores one secret,
// sealed with the master key (AES-256-GCM, additional data `secret:<context>:<key>`). Without
// --value or --value-file the value is read from standard input. One trailing newline of a
// file or of stdin is dropped. The value is never printed or logged.
import { readFile } from 'node:fs/promises';
import { Args, Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { getContext, MAX_SECRET_BYTES, setSecret } from '../../../kernel/orchestrator/secrets/index.ts';
import { InputError, messageOf } from '../../../core/errors.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, warnIfUnbound, withDatabase } from '../context/shared.ts';

function dropOneNewline(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new InputError(USAGE_ERROR_CODE, 'give the value with --value, --value-file or on standard input (not a terminal)');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_SECRET_BYTES + 2) throw new InputError('SVC_ERR_SECRETS_VALUE', `a secret value must be at most ${MAX_SECRET_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

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
    let value: string;
    if (flags.value !== undefined) {
      value = flags.value;
    } else if (flags['value-file'] !== undefined) {
      try {
        value = dropOneNewline(await readFile(flags['value-file'], 'utf8'));
      } catch (error) {
        throw new InputError('SVC_ERR_SECRETS_VALUE', `--value-file ${flags['value-file']} could not be read: ${messageOf(error)}`);
      }
    } else {
      value = dropOneNewline(await readStdin());
    }
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const result = await withDatabase(databaseUrlOf(config, flags['database-url']), async (pool) => {
      const context = await getContext(pool, args.context);
      const set = await setSecret(pool, keys.current as Buffer, args.context, args.key, value);
      warnIfUnbound(context);
      return set;
    });
    if (!this.jsonEnabled()) this.log(`${result.replaced ? 'Replaced' : 'Set'} secret ${args.context}:${args.key}.`);
    return { context: args.context, key: args.key, replaced: result.replaced };
  }
}
