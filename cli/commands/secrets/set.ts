// `svc secrets set <context> <NAME> [--value <v> | --value - | --value-file <f>] [--json]`: sets
// one secret of a TEST context (`allowLocalExecution: true`, spec "Authentication" 7) through the
// Platform; the orchestrator seals it with its master key. Any other context is refused there
// and nothing changes. Without --value or --value-file (or with `--value -`) the value is read
// from standard input; one trailing newline of a file or of stdin is dropped. The value is never
// printed.
import { Args, Flags } from '@oclif/core';
import type { SecretSetResult } from '../../../schemas/http/org.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { readSecretValue } from '../../../core/cli/secret-value.ts';
import { InputError } from '../../../core/errors.ts';

/** The orchestrator's limit (bytes of UTF-8). */
const MAX_VALUE_BYTES = 64 * 1024;

export default class SecretsSet extends SvcCommand {
  static override description = 'Set a secret of a test context (allowLocalExecution: true) through the Platform; other contexts are refused';
  static override examples = [
    'printf %s "$TOKEN" | <%= config.bin %> secrets set test NPM_TOKEN',
    '<%= config.bin %> secrets set test API_KEY --value-file key.txt',
  ];
  static override args = {
    context: Args.string({ required: true, description: 'a test context (allowLocalExecution: true)' }),
    name: Args.string({ required: true, description: 'secret name (letters, digits, "_")' }),
  };
  static override flags = {
    value: Flags.string({ description: 'the value, or "-" for standard input (a value here shows in the process list and shell history: prefer stdin)', exclusive: ['value-file'] }),
    'value-file': Flags.string({ description: 'read the value from this file', exclusive: ['value'] }),
  };

  async run(): Promise<SecretSetResult> {
    const { args, flags } = await this.parse(SecretsSet);
    const value = await readSecretValue(flags, { maxBytes: MAX_VALUE_BYTES, dashReadsStdin: true });
    if (value === '') throw new InputError('SVC_ERR_SECRETS_VALUE', 'a secret value must not be empty');
    if (Buffer.byteLength(value, 'utf8') > MAX_VALUE_BYTES) throw new InputError('SVC_ERR_SECRETS_VALUE', `a secret value must be at most ${MAX_VALUE_BYTES} bytes`);
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const result = await client.setSecret(args.context, args.name, value);
    if (!this.jsonEnabled()) this.log(`${result.replaced ? 'Replaced' : 'Set'} secret ${result.context}:${result.key}.`);
    return result;
  }
}
