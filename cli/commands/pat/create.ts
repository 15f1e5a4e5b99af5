// `svc pat create [--name <n>] [--expires-in <days>] [--scope <role>…] [--json]`: a new personal
// access token of the logged-in user and org, minted by the Platform. Its value is printed this
// once; the Platform keeps only its hash. `--scope` narrows it to roles (docs/roles.md).
import { Flags } from '@oclif/core';
import type { PatCreated } from '../../../schemas/http/pats.ts';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError } from '../../../core/errors.ts';

export default class PatCreate extends SvcCommand {
  static override description = 'Create a personal access token of your own (the value is shown once)';
  static override examples = ['<%= config.bin %> pat create --name ci-laptop --expires-in 30', '<%= config.bin %> pat create --name wallboard --scope viewer'];
  static override flags = {
    name: Flags.string({ description: 'a label to tell the token apart in "svc pat list"', default: '' }),
    'expires-in': Flags.integer({ description: 'days until the token stops working (1-366; default: until revoked)' }),
    scope: Flags.string({
      description: 'narrow the token to this role (repeat for several): it acts with your roles intersected with these (docs/roles.md)',
      multiple: true,
      options: ['viewer', 'developer', 'approver', 'admin'],
    }),
  };

  async run(): Promise<PatCreated> {
    const { flags } = await this.parse(PatCreate);
    const days = flags['expires-in'];
    if (days !== undefined && (days < 1 || days > 366)) throw new InputError(USAGE_ERROR_CODE, `--expires-in must be 1 to 366 days; got ${days}`);
    const { PlatformClient } = await import('../../platform-client.ts');
    const client = await PlatformClient.fromConfig();
    const scopes = flags.scope === undefined ? undefined : ([...new Set(flags.scope)] as Array<'viewer' | 'developer' | 'approver' | 'admin'>);
    const created = await client.createPat({
      ...(flags.name !== '' ? { name: flags.name } : {}),
      ...(days !== undefined ? { expiresInDays: days } : {}),
      ...(scopes !== undefined ? { scopes } : {}),
    });
    if (!this.jsonEnabled()) {
      this.log(created.token);
      process.stderr.write(
        `token ${created.id}${created.name !== '' ? ` "${created.name}"` : ''} of ${created.user} (org ${created.orgId}), ${created.expiresAt === null ? 'valid until revoked' : `expires ${created.expiresAt}`}; it is shown only now\n`,
      );
    }
    return created;
  }
}
