// `svc-admin signing-key list`: kid, status, created_at. From the database when one is given,
// else from the admin API (`GET /api/v1/admin/signing-keys`, a token with secret.read).
import { Flags } from '@oclif/core';
import { SvcCommand } from '../../../core/cli/base-command.ts';
import { listSigningKeys } from '../../../kernel/orchestrator/identity/key-store.ts';
import { AuthenticationError, InputError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';
import { SigningKeyList, type SigningKeySummary } from '../../../schemas/identity.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { adminConfig, databaseFlag, databaseUrlOf, withDatabase } from './shared.ts';

const checkList = compileSchema(SigningKeyList);

export default class SigningKeyListCommand extends SvcCommand {
  static override description = 'List signing keys (kid, status, created_at)';
  static override flags = {
    ...databaseFlag,
    url: Flags.string({ description: 'orchestrator address for the admin API (default: SVC_SERVER_PUBLIC_URL, else the provenance issuer)' }),
    token: Flags.string({ description: 'admin token with secret.read (default: SVC_BOOTSTRAP_ADMIN_TOKEN)' }),
  };

  async run(): Promise<{ keys: SigningKeySummary[] }> {
    const { flags } = await this.parse(SigningKeyListCommand);
    const config = await adminConfig();
    const dbUrl = databaseUrlOf(config, flags['database-url']);
    const keys = dbUrl ? await withDatabase(dbUrl, listSigningKeys) : await this.#fromApi(flags.url ?? config.server.publicUrl ?? config.orchestrator.provenanceIssuer, flags.token ?? config.secrets.bootstrapAdminToken);
    if (!this.jsonEnabled()) {
      if (keys.length === 0) this.log('no signing keys');
      for (const key of keys) this.log(`${key.kid}  ${key.status.padEnd(8)}  ${key.createdAt}`);
    }
    return { keys };
  }

  async #fromApi(base: string | undefined, token: string | undefined): Promise<SigningKeySummary[]> {
    if (!base) throw new InputError(USAGE_ERROR_CODE, 'no database and no orchestrator address: pass --database-url, or --url with --token');
    if (!token) throw new InputError(USAGE_ERROR_CODE, 'reading keys through the admin API needs an unrestricted admin token: pass --token or set SVC_BOOTSTRAP_ADMIN_TOKEN');
    const url = new URL('api/v1/admin/signing-keys', base.endsWith('/') ? base : `${base}/`);
    let response: Response;
    try {
      response = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(15_000) });
    } catch (error) {
      throw new UnavailableError('SVC_ERR_ADMIN_API_UNREACHABLE', `could not reach ${url.origin}: ${messageOf(error)}`);
    }
    const body = (await response.json().catch(() => undefined)) as unknown;
    if (response.status === 401 || response.status === 403) {
      throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_INVALID', `the admin API refused the token (${response.status}); it needs a token without scope restrictions that has secret.read (the bootstrap token or one from "svc-admin admin-token create --unrestricted")`);
    }
    if (!response.ok || !checkList.check(body)) throw new SvcError('SVC_ERR_ADMIN_API', `the admin API answered ${response.status} with an unexpected body`);
    return body.keys;
  }
}
