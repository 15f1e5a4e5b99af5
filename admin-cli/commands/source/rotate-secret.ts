// `svc-admin source rotate-secret <source-id> [--finish]`: a new secret while the old one still
// verifies (both accepted); `--finish` drops the old one once the sender uses the new.
import { Args, Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { rotateSourceSecret, type SourceSummary } from '../../../kernel/orchestrator/sources/store.ts';
import { adminConfig, databaseFlag, databaseUrl, masterKey, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class SourceRotateSecret extends SvcCommand {
  static override description = 'Rotate a source secret: prints the new one once; both verify until --finish';
  static override args = { id: Args.string({ required: true, description: 'source id' }) };
  static override flags = {
    ...databaseFlag,
    finish: Flags.boolean({ description: 'stop accepting the previous secret', default: false }),
    secret: Flags.string({ description: 'use this new secret instead of generating one' }),
  };

  async run(): Promise<{ source: SourceSummary; secret?: string }> {
    const { args, flags } = await this.parse(SourceRotateSecret);
    const config = await adminConfig();
    const key = await masterKey(config);
    const result = await withDatabase(databaseUrl(config, flags['database-url']), (pool) =>
      audited(pool, { action: 'source.rotate_secret', target: `source:${args.id}`, detail: () => (flags.finish ? 'rotation finished (old secret dropped)' : 'new secret added') }, () =>
        rotateSourceSecret(pool, key, args.id, { finish: flags.finish, ...(flags.secret ? { secret: flags.secret } : {}) }),
      ),
    );
    if (!this.jsonEnabled()) {
      if (result.secret !== undefined) {
        this.log(`new secret for source ${args.id} (shown once): ${result.secret}`);
        this.log(`the previous secret still verifies until: svc-admin source rotate-secret ${args.id} --finish`);
      } else this.log(`rotation finished for source ${args.id}: only the current secret verifies`);
    }
    return result;
  }
}
