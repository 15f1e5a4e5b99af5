// `svc-admin context list`: every context with its rules and binding (never secret values).
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { listContexts, type SecretContext } from '../../../kernel/orchestrator/secrets/index.ts';
import { adminConfig, databaseFlag, databaseUrlOf, describeContext, warnIfUnbound, withDatabase } from './shared.ts';

export default class ContextList extends SvcCommand {
  static override description = 'List secret contexts with their protection rules and bindings';
  static override flags = { ...databaseFlag };

  async run(): Promise<{ contexts: SecretContext[] }> {
    const { flags } = await this.parse(ContextList);
    const config = await adminConfig();
    const contexts = await withDatabase(databaseUrlOf(config, flags['database-url']), listContexts);
    for (const context of contexts) warnIfUnbound(context);
    if (!this.jsonEnabled()) {
      if (contexts.length === 0) this.log('no secret contexts');
      for (const context of contexts) this.log(describeContext(context));
    }
    return { contexts };
  }
}
