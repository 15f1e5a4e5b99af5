// `svc logout`: forgets the stored token (the Platform address and org stay for the next login).
import { SvcCommand } from '../../core/cli/base-command.ts';

export default class Logout extends SvcCommand {
  static override description = 'Remove the stored personal access token from the config file';

  async run(): Promise<{ loggedOut: boolean; configPath: string }> {
    await this.parse(Logout);
    const { configPath, readPlatformConfig, writePlatformConfig } = await import('../platform-client.ts');
    const existing = await readPlatformConfig();
    const path = configPath();
    if (existing.token === undefined) {
      if (!this.jsonEnabled()) this.log('not logged in; nothing to do');
      return { loggedOut: false, configPath: path };
    }
    const { token: _token, refreshToken: _refresh, expiresAt: _expires, ...rest } = existing;
    await writePlatformConfig(rest);
    if (!this.jsonEnabled()) this.log(`logged out: token removed from ${path} (the token itself stays valid: if it leaked, revoke it with "svc pat revoke <id>" from another login, or ask an operator)`);
    return { loggedOut: true, configPath: path };
  }
}
