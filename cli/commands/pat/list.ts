// `svc pat list [--json]`: your own personal access tokens — id, name, created, last used,
// expiry, revoked — never their values.
import type { PatList, PatView } from '../../../schemas/http/pats.ts';
import { SvcCommand } from '../../../core/cli/base-command.ts';

const HEADINGS = ['ID', 'NAME', 'CREATED', 'LAST USED', 'EXPIRES', 'STATE'];

const day = (iso: string | null, none: string) => (iso === null ? none : `${iso.slice(0, 16).replace('T', ' ')}Z`);

function state(pat: PatView, now: number): string {
  if (pat.revokedAt !== null) return 'revoked';
  if (pat.expiresAt !== null && Date.parse(pat.expiresAt) <= now) return 'expired';
  return 'active';
}

/** The table as lines: headings, then one row per token, columns padded to their widest cell. */
export function formatPatList(tokens: readonly PatView[], now = Date.now()): string[] {
  const rows = tokens.map((p) => [p.id, p.name === '' ? '-' : p.name, day(p.createdAt, '-'), day(p.lastUsedAt, 'never'), day(p.expiresAt, 'never'), state(p, now)]);
  const widths = HEADINGS.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [HEADINGS, ...rows].map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
}

export default class PatListCommand extends SvcCommand {
  static override description = 'List your personal access tokens (never their values)';

  async run(): Promise<PatList> {
    await this.parse(PatListCommand);
    const { PlatformClient } = await import('../../platform-client.ts');
    const list = await (await PlatformClient.fromConfig()).listPats();
    if (!this.jsonEnabled()) {
      if (list.tokens.length === 0) this.log('no tokens');
      else for (const line of formatPatList(list.tokens)) this.log(line);
    }
    return list;
  }
}
