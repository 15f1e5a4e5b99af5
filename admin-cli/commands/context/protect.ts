// `svc-admin context protect <name> [--required-reviewer <login>...] [--wait-timer <seconds>]
// [--concurrency-limit <n> | --no-concurrency-limit]`: the protection rules a context adds to its
// binding, branches and trust rules. Jobs using the context wait for them before it is released
// (docs/run-control.md). Rules not named keep their value.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { protectContext, type ProtectionInput, type SecretContext } from '../../../kernel/orchestrator/secrets/index.ts';
import { adminConfig, databaseFlag, databaseUrlOf, describeContext, warnIfUnbound, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class ContextProtect extends SvcCommand {
  static override description = 'Set required reviewers, a wait timer or a concurrency limit on a secret context';
  static override examples = [
    '<%= config.bin %> context protect deploy --required-reviewer alice --required-reviewer bob',
    '<%= config.bin %> context protect deploy --wait-timer 600 --concurrency-limit 1',
    '<%= config.bin %> context protect deploy --no-required-reviewers --no-concurrency-limit',
  ];
  static override args = { name: Args.string({ required: true, description: 'context name' }) };
  static override flags = {
    ...databaseFlag,
    'required-reviewer': Flags.string({ multiple: true, description: 'login that may approve a job before the secrets are released (repeatable; replaces the list)' }),
    'no-required-reviewers': Flags.boolean({ description: 'remove every required reviewer', default: false, exclusive: ['required-reviewer'] }),
    'wait-timer': Flags.integer({ description: 'seconds a job waits after it is ready before the secrets are released (0 removes it)', min: 0 }),
    'concurrency-limit': Flags.integer({ description: 'jobs using the context queued or running at once', min: 1 }),
    'no-concurrency-limit': Flags.boolean({ description: 'remove the concurrency limit', default: false, exclusive: ['concurrency-limit'] }),
  };

  async run(): Promise<{ context: SecretContext }> {
    const { args, flags } = await this.parse(ContextProtect);
    const input: ProtectionInput = {};
    if (flags['required-reviewer'] !== undefined) input.requiredReviewers = flags['required-reviewer'];
    if (flags['no-required-reviewers']) input.requiredReviewers = [];
    if (flags['wait-timer'] !== undefined) input.waitTimerSeconds = flags['wait-timer'];
    if (flags['concurrency-limit'] !== undefined) input.concurrencyLimit = flags['concurrency-limit'];
    if (flags['no-concurrency-limit']) input.concurrencyLimit = null;
    const config = await adminConfig();
    const context = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => audited(pool, { action: 'secret_context.protect', target: `context:${args.name}` }, () => protectContext(pool, args.name, input)));
    warnIfUnbound(context);
    if (!this.jsonEnabled()) this.log(describeContext(context));
    return { context };
  }
}
