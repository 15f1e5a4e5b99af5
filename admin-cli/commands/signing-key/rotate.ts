// `svc-admin signing-key rotate`: a new db key becomes active; the old one starts retiring.
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, dbCustodyFor, withDatabase } from './shared.ts';
import { audited } from '../audit/shared.ts';

export default class SigningKeyRotate extends SvcCommand {
  static override description = 'Generate a new active db-custody key; the previous active key becomes retiring';
  static override flags = { ...databaseFlag };

  async run(): Promise<{ kid: string; createdAt: string }> {
    const { flags } = await this.parse(SigningKeyRotate);
    const config = await adminConfig();
    const keys = await adminMasterKeys(config);
    const key = await withDatabase(databaseUrlOf(config, flags['database-url']), (pool) => audited(pool, { action: 'signing_key.rotate', target: (k) => `key:${k.kid}` }, () => dbCustodyFor(config, pool, keys).rotate()));
    this.log(key.kid);
    return { kid: key.kid, createdAt: key.createdAt.toISOString() };
  }
}
