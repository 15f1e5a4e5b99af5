// `svc-admin context bind <name> [--repository <pattern>...] [--org <org>...]`: adds repository
// patterns and orgs to the context's allowlist (the binding); existing entries stay.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { bindContext, type SecretContext } from '../../../kernel/orchestrator/secrets/index.ts';
import { adminConfig, databaseFlag, databaseUrlOf, describeContext, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class ContextBind extends SvcCommand {
  static override description = 'Bind a secret context to repositories (patterns) or orgs: only their runs can use its secrets';
  static override examples = ['<%= config.bin %> context bind deploy --repository "acme/*"', '<%= config.bin %> context bind shared --org acme'];
  static override args = { name: Args.string({ required: true, description: 'context name' }) };
  static override flags = {
    ...databaseFlag,
    repository: Flags.string({ multiple: true, description: 'repository pattern, e.g. acme/app or acme/* (repeatable)' }),
    org: Flags.string({ multiple: true, description: 'org id (repeatable)' }),
  };

  async run(): Promise<{ context: SecretContext }> {
    const { args, flags } = await this.parse(ContextBind);
    const config = await adminConfig();
    const context = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'secret_context.bind', target: `context:${args.name}` }, () => bindContext(pool, args.name, { repositories: flags.repository ?? [], orgs: flags.org ?? [] })),
    );
    if (!this.jsonEnabled()) this.log(describeContext(context));
    return { context };
  }
}
