// `svc-admin context create <name> [--branches <glob>...] [--repositories <pattern>...]
// [--orgs <org>...] [--min-trust trusted|any] [--allow-local-execution] [--required-reviewer <login>...]
// [--wait-timer <s>] [--concurrency-limit <n>]`: a secret context
// with its protection rules. Without a repository or org it is unbound (a warning says so).
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { checkMinTrust, createContext, type SecretContext } from '../../../kernel/orchestrator/secrets/index.ts';
import { adminConfig, databaseFlag, databaseUrlOf, describeContext, warnIfUnbound, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class ContextCreate extends SvcCommand {
  static override description = 'Create a secret context with its protection rules (branches, repositories, minimum trust, local execution, reviewers, wait timer, concurrency limit)';
  static override examples = ['<%= config.bin %> context create deploy --branches main --branches "release/*" --repositories "acme/*" --min-trust trusted'];
  static override args = { name: Args.string({ required: true, description: 'context name (letters, digits, ".", "_", "-")' }) };
  static override flags = {
    ...databaseFlag,
    branches: Flags.string({ multiple: true, description: 'branch glob the run must be on (repeatable; default: any ref)' }),
    repositories: Flags.string({ multiple: true, description: 'repository pattern bound to the context, e.g. acme/* (repeatable)' }),
    orgs: Flags.string({ multiple: true, description: 'org id bound to the context (repeatable)' }),
    'min-trust': Flags.string({ description: 'trusted (default): only trusted runs; any: every trust tier', options: ['trusted', 'any'], default: 'trusted' }),
    'allow-local-execution': Flags.boolean({ description: 'test runs (svc run remote) may use this context', default: false }),
    'required-reviewer': Flags.string({ multiple: true, description: 'login that must approve a job before the secrets are released (repeatable)' }),
    'wait-timer': Flags.integer({ description: 'seconds a job waits after it is ready before the secrets are released', min: 0 }),
    'concurrency-limit': Flags.integer({ description: 'jobs using the context queued or running at once', min: 1 }),
  };

  async run(): Promise<{ context: SecretContext }> {
    const { args, flags } = await this.parse(ContextCreate);
    const minTrust = checkMinTrust(flags['min-trust']);
    const config = await adminConfig();
    const context = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'secret_context.create', target: `context:${args.name}` }, () => createContext(pool, {
        name: args.name,
        branches: flags.branches ?? [],
        repositories: flags.repositories ?? [],
        orgs: flags.orgs ?? [],
        minTrust,
        allowLocalExecution: flags['allow-local-execution'],
        requiredReviewers: flags['required-reviewer'] ?? [],
        ...(flags['wait-timer'] !== undefined ? { waitTimerSeconds: flags['wait-timer'] } : {}),
        ...(flags['concurrency-limit'] !== undefined ? { concurrencyLimit: flags['concurrency-limit'] } : {}),
      })),
    );
    warnIfUnbound(context);
    if (!this.jsonEnabled()) this.log(describeContext(context));
    return { context };
  }
}
