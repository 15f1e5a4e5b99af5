// `svc pat revoke <id> [--json]`: revokes one of your own tokens at once (the id from
// "svc pat list"). Revoking the token this CLI is logged in with logs it out in effect.
import { Args } from '@oclif/core';
import type { PatRevoked } from '../../../schemas/http/pats.ts';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export default class PatRevoke extends SvcCommand {
  static override description = 'Revoke one of your personal access tokens';
  static override examples = ['<%= config.bin %> pat revoke 0b7c5b0e-…'];
  static override args = { id: Args.string({ required: true, description: 'token id, as "svc pat list" prints it' }) };

  async run(): Promise<PatRevoked> {
    const { args } = await this.parse(PatRevoke);
    if (!UUID.test(args.id)) throw new InputError(USAGE_ERROR_CODE, `"${args.id.slice(0, 80)}" is not a token id (a UUID, as "svc pat list" prints it)`);
    const { PlatformClient } = await import('../../platform-client.ts');
    const result = await (await PlatformClient.fromConfig()).revokePat(args.id);
    if (!this.jsonEnabled()) this.log(result.alreadyRevoked ? `token ${result.id} was already revoked` : `token ${result.id} revoked`);
    return result;
  }
}
