// `svc login --token <PAT> [--platform-url <url>] [--org <org>]`: checks the personal access token
// against the Platform and stores `{ platformUrl, org, token }` in the user's config file (mode
// 0600). `--token -` reads the token from standard input (keeps it out of the process list). The
// browser and device flows need a Platform identity provider this install does not have.
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { InputError, NotAllowedError, UnavailableError } from '../../core/errors.ts';

const NO_BROWSER_FLOW =
  'browser and device login are not available on this install; ask an operator for a personal access token ("svc-admin relay pat create <org> --user <you>") and run "svc login --token <PAT> --platform-url <url>"';

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
  static override description = 'Log in to the Platform with a personal access token (stored in ~/.config/svc/config.json, mode 0600)';
  static override examples = [
    '<%= config.bin %> login --token svcpat_… --platform-url https://platform.example.com',
    'echo "$SVC_PAT" | <%= config.bin %> login --token - --platform-url https://platform.example.com --org acme',
  ];
  static override flags = {
    token: Flags.string({ description: 'personal access token ("-" reads it from standard input)' }),
    device: Flags.boolean({ description: 'device-code login (not available on this install)', default: false }),
    'platform-url': Flags.string({ description: 'the Platform address (default: the stored one, or SVC_PLATFORM_URL)' }),
    org: Flags.string({ description: "org to act on (default: the token's org)" }),
  };

  async run(): Promise<LoginOutput> {
    const { flags } = await this.parse(Login);
    const { PlatformClient, checkOrg, checkPlatformUrl, configPath, readPlatformConfig, writePlatformConfig } = await import('../platform-client.ts');
    if (flags.device && flags.token !== undefined) throw new InputError(USAGE_ERROR_CODE, '--token and --device cannot be combined');
    if (flags.device || flags.token === undefined) throw new UnavailableError('SVC_ERR_CLI_LOGIN_NO_BROWSER', NO_BROWSER_FLOW);
    const token = flags.token === '-' ? await readStdin() : flags.token.trim();
    if (token === '' || /\s/.test(token)) throw new InputError(USAGE_ERROR_CODE, 'the token is empty or contains spaces; pass it exactly as "svc-admin relay pat create" printed it');

    const existing = await readPlatformConfig();
    const rawUrl = flags['platform-url'] ?? existing.platformUrl ?? process.env['SVC_PLATFORM_URL'];
    if (rawUrl === undefined || rawUrl === '') throw new InputError(USAGE_ERROR_CODE, 'no Platform address: pass --platform-url <url> (or set SVC_PLATFORM_URL)');
    const platformUrl = checkPlatformUrl(rawUrl);
    if (flags.org !== undefined) checkOrg(flags.org);

    // Check the token before storing it: a mistyped token fails here, not at the first `svc runs`.
    const who = await new PlatformClient({ platformUrl, token, org: flags.org ?? 'unused' }).whoami();
    const org = flags.org ?? who.orgId;
    if (org !== who.orgId) throw new NotAllowedError('SVC_ERR_CLI_LOGIN_WRONG_ORG', `this token belongs to org ${who.orgId}, not ${org}; log in with a token of ${org} or leave out --org`);

    const path = await writePlatformConfig({ ...existing, platformUrl, org, token });
    const output: LoginOutput = { platformUrl, org, user: who.user ?? null, configPath: path };
    if (!this.jsonEnabled()) this.log(`logged in to ${platformUrl} as ${who.user ?? 'the org platform token'} (org ${org}); token stored in ${configPath()}`);
    return output;
  }
}
