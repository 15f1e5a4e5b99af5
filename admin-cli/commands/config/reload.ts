// `svc-admin config reload [--url] [--token] [--json]`: asks one orchestrator to reload its config
// (`POST /admin/config/reload?source=cli`, counted with source `cli`) and prints the outcome:
// what changed, and changes held at the running value. A version written with `config set` or
// `config rollback` reloads every node by itself; this is for a changed local file or to retry.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { AuthenticationError, ConflictError, InputError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';
import { ConfigReloadResult } from '../../../schemas/http/config.ts';
import { compileSchema } from '../../../schemas/validate.ts';
import { adminConfig } from './shared.ts';

const checkResult = compileSchema(ConfigReloadResult);

export default class ConfigReload extends SvcCommand {
  static override description = 'Reload an orchestrator\'s config now (re-reads its file, environment and the newest shared version)';
  static override flags = {
    url: Flags.string({ description: 'the orchestrator (default: SVC_SERVER_PUBLIC_URL, else http://127.0.0.1:<SVC_SERVER_PORT>)' }),
    token: Flags.string({ description: 'admin token with config.write (default: SVC_BOOTSTRAP_ADMIN_TOKEN)' }),
  };

  async run(): Promise<ConfigReloadResult> {
    const { flags } = await this.parse(ConfigReload);
    const config = await adminConfig();
    const base = flags.url ?? config.server.publicUrl ?? `http://127.0.0.1:${config.server.port}${(config.server.basePath ?? '').replace(/\/$/, '')}`;
    const token = flags.token ?? config.secrets.bootstrapAdminToken;
    if (!token) throw new InputError(USAGE_ERROR_CODE, 'a reload needs an admin token with config.write: pass --token or set SVC_BOOTSTRAP_ADMIN_TOKEN');
    let url: URL;
    try {
      url = new URL('admin/config/reload?source=cli', base.endsWith('/') ? base : `${base}/`);
    } catch {
      throw new InputError(USAGE_ERROR_CODE, `--url ${base} is not an http(s) address`);
    }
    let response: Response;
    try {
      response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(60_000) });
    } catch (error) {
      throw new UnavailableError('SVC_ERR_ADMIN_API_UNREACHABLE', `could not reach ${url.origin}: ${messageOf(error)}`);
    }
    const body = (await response.json().catch(() => undefined)) as unknown;
    if (response.status === 401 || response.status === 403) {
      throw new AuthenticationError('SVC_ERR_ADMIN_TOKEN_INVALID', `the orchestrator refused the token (${response.status}); it needs scope config.write`);
    }
    if (!checkResult.check(body)) throw new SvcError('SVC_ERR_ADMIN_API', `the admin API answered ${response.status} with an unexpected body`);
    if (!body.success) {
      if (body.result === 'failed') throw new SvcError('SVC_ERR_CONFIG_RELOAD_FAILED', `the config reload did not apply, the running config is kept: ${body.error ?? 'unknown reason'}`);
      throw new ConflictError('SVC_ERR_CONFIG_RELOAD_IN_PROGRESS', `${body.error ?? 'Reload already in progress'}; try again in a moment`);
    }
    if (!this.jsonEnabled()) {
      this.log(`reloaded: shared config version ${body.version ?? 'none'}; ${body.changed?.length ? `changed ${body.changed.join(', ')}` : 'nothing changed'}`);
      for (const warning of body.warnings ?? []) this.warn(warning);
    }
    return body;
  }
}
