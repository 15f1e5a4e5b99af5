// `svc login [--token <PAT> | --device] [--platform-url <url>] [--org <org>]` (docs/login.md):
//   plain      the device flow (RFC 8628) with the approval page opened in the browser;
//   --device   the same flow for headless use: prints the address and code, polls;
//   --token    checks a personal access token against the Platform (`-` reads standard input,
//              which keeps it out of the process list).
// Each stores `{ platformUrl, org, token }` in the user's config file (mode 0600); a token of a
// person signed in through an identity provider also stores `refreshToken` and `expiresAt`.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { InputError, NotAllowedError } from '../../core/errors.ts';

export interface LoginOutput {
  platformUrl: string;
  org: string;
  user: string | null;
  configPath: string;
}

async function readStdin(): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of process.stdin) parts.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(parts).toString('utf8').trim();
}

export default class Login extends SvcCommand {
  static override description =
    'Log in to the Platform: approve in the browser (default), on another device (--device), or with a personal access token (--token); stored in ~/.config/svc/config.json, mode 0600';
  static override examples = [
    '<%= config.bin %> login --platform-url https://platform.example.com',
    '<%= config.bin %> login --device --platform-url https://platform.example.com',
    '<%= config.bin %> login --token svcpat_… --platform-url https://platform.example.com',
    'echo "$SVC_PAT" | <%= config.bin %> login --token - --platform-url https://platform.example.com --org acme',
  ];
  static override flags = {
    token: Flags.string({ description: 'personal access token ("-" reads it from standard input)' }),
    device: Flags.boolean({ description: 'headless login: print the approval address and code, open no browser', default: false }),
    'platform-url': Flags.string({ description: 'the Platform address (default: the stored one, or SVC_PLATFORM_URL)' }),
    org: Flags.string({ description: "org to act on (default: the token's org)" }),
  };

  async run(): Promise<LoginOutput> {
    const { flags } = await this.parse(Login);
    const { PlatformClient, checkOrg, checkPlatformUrl, configPath, readPlatformConfig, writePlatformConfig } = await import('../platform-client.ts');
    if (flags.device && flags.token !== undefined) throw new InputError(USAGE_ERROR_CODE, '--token and --device cannot be combined');
    const token = flags.token === undefined ? undefined : flags.token === '-' ? await readStdin() : flags.token.trim();
    if (token !== undefined && (token === '' || /\s/.test(token))) {
      throw new InputError(USAGE_ERROR_CODE, 'the token is empty or contains spaces; pass it exactly as "svc pat create" or "svc-admin relay pat create" printed it');
    }

    const existing = await readPlatformConfig();
    const rawUrl = flags['platform-url'] ?? existing.platformUrl ?? process.env['SVC_PLATFORM_URL'];
    if (rawUrl === undefined || rawUrl === '') throw new InputError(USAGE_ERROR_CODE, 'no Platform address: pass --platform-url <url> (or set SVC_PLATFORM_URL)');
    const platformUrl = checkPlatformUrl(rawUrl);
    if (flags.org !== undefined) checkOrg(flags.org);
    if (token === undefined) return this.#deviceFlow(platformUrl, flags.org, !flags.device);

    // Check the token before storing it: a mistyped token fails here, not at the first `svc runs`.
    const who = await new PlatformClient({ platformUrl, token, org: flags.org ?? 'unused' }).whoami();
    const org = flags.org ?? who.orgId;
    if (org !== who.orgId) throw new NotAllowedError('SVC_ERR_CLI_LOGIN_WRONG_ORG', `this token belongs to org ${who.orgId}, not ${org}; log in with a token of ${org} or leave out --org`);

    // A token given by hand is not renewed: drop what a provider login stored.
    const { refreshToken: _refresh, expiresAt: _expires, ...kept } = existing;
    const path = await writePlatformConfig({ ...kept, platformUrl, org, token });
    const output: LoginOutput = { platformUrl, org, user: who.user ?? null, configPath: path };
    if (!this.jsonEnabled()) this.log(`logged in to ${platformUrl} as ${who.user ?? 'the org platform token'} (org ${org}); token stored in ${configPath()}`);
    return output;
  }

  /** Browser (`openBrowser`) or device login: the approver's new token is stored like --token's. */
  async #deviceFlow(platformUrl: string, wantedOrg: string | undefined, openBrowser: boolean): Promise<LoginOutput> {
    const { PlatformClient, configPath, readPlatformConfig, writePlatformConfig } = await import('../platform-client.ts');
    const { deviceLogin } = await import('../device-login.ts');
    const answer = await deviceLogin({ platformUrl, openBrowser, say: (line) => process.stderr.write(`${line}\n`) });
    if (wantedOrg !== undefined && wantedOrg !== answer.org) {
      // The token is of no use here: revoke it at once rather than leave it live and unstored.
      const client = new PlatformClient({ platformUrl, org: answer.org, token: answer.access_token });
      const revoked = await client.revokePat(answer.token_id).then(
        () => 'it was revoked',
        () => `revoke it with "svc pat revoke ${answer.token_id}"`,
      );
      throw new NotAllowedError('SVC_ERR_CLI_LOGIN_WRONG_ORG', `the approver signed in to org ${answer.org}, not ${wantedOrg} (${revoked}); approve signed in to ${wantedOrg}, or leave out --org`);
    }
    // Read again: the file may have changed while the person was approving.
    const existing = await readPlatformConfig();
    const { refreshToken: _refresh, expiresAt: _expires, ...kept } = existing;
    // A person's token through a provider is short-lived: its refresh token renews it (token-refresh.ts).
    const renewal = answer.refresh_token !== undefined && answer.expires_at !== null ? { refreshToken: answer.refresh_token, expiresAt: answer.expires_at } : {};
    const path = await writePlatformConfig({ ...kept, platformUrl, org: answer.org, token: answer.access_token, ...renewal });
    if (!this.jsonEnabled()) this.log(`logged in to ${platformUrl} as ${answer.user} (org ${answer.org}); token stored in ${configPath()}`);
    return { platformUrl, org: answer.org, user: answer.user, configPath: path };
  }
}
