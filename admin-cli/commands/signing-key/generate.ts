// `svc-admin signing-key generate`: the first db key; prints the kid of the key already active
// when there is one (a no-op, also when another node won the race).
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, dbCustodyFor, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class SigningKeyGenerate extends SvcCommand {
  static override description = 'Create the initial db-custody signing key (no-op when one is active)';
  static override flags = { ...databaseFlag };

  async run(): Promise<{ kid: string; created: boolean; createdAt: string }> {
    const { flags } = await this.parse(SigningKeyGenerate);
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const key = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => audited(pool, { action: 'signing_key.generate', target: (k) => `key:${k.kid}` }, () => dbCustodyFor(config, pool, keys).generate()));
    this.log(key.kid);
    if (!key.created) this.logToStderr('a key was already active; nothing generated');
    return { kid: key.kid, created: key.created ?? false, createdAt: key.createdAt.toISOString() };
  }
}
