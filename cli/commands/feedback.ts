// `svc feedback --draft [--out <file>]`: writes a draft bug report in Markdown (what happened,
// what was expected, steps, and the `svc diagnostics` report with secrets redacted) to a file or
// standard output, for the user to edit and send where they choose. It never sends anything.
import { writeFile } from 'node:fs/promises';
import { Flags } from '@oclif/core';
import { SvcCommand, USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { InputError, messageOf } from '../../core/errors.ts';

export function draftReport(diagnostics: readonly string[], now = new Date()): string {
  return [
    '# svc bug report (draft)',
    '',
    `Drafted ${now.toISOString()} by \`svc feedback --draft\`. Edit every section; nothing has been sent.`,
    '',
    '## What happened',
    '',
    '<!-- The command you ran and what it printed (exit code, error code such as SVC_ERR_…). -->',
    '',
    '## What I expected',
    '',
    '<!-- What should have happened instead. -->',
    '',
    '## Steps to reproduce',
    '',
    '1. ',
    '',
    '## Diagnostics',
    '',
    '```text',
    ...diagnostics,
    '```',
    '',
  ].join('\n');
}

export default class Feedback extends SvcCommand {
  static override description = 'Write a draft bug report (Markdown with the diagnostics report, secrets redacted) to edit; never sends anything';
  static override examples = ['<%= config.bin %> feedback --draft > report.md', '<%= config.bin %> feedback --draft --out report.md'];
  static override flags = {
    draft: Flags.boolean({ description: 'write the draft (required: svc sends no feedback itself)', default: false }),
    out: Flags.string({ char: 'o', description: 'write the draft to this file instead of standard output' }),
  };

  async run(): Promise<{ file: string | null; draft: string }> {
    const { flags } = await this.parse(Feedback);
    if (!flags.draft) throw new InputError(USAGE_ERROR_CODE, 'svc feedback only drafts a report for you to edit and send: run "svc feedback --draft [--out <file>]"');
    const { collectDiagnostics, formatDiagnostics } = await import('../diagnostics.ts');
    const draft = draftReport(formatDiagnostics(await collectDiagnostics(process.cwd())));
    if (flags.out !== undefined) {
      try {
        await writeFile(flags.out, draft, { flag: 'wx' });
      } catch (error) {
        const exists = (error as NodeJS.ErrnoException).code === 'EEXIST';
        throw new InputError('SVC_ERR_CLI_FEEDBACK_WRITE', `could not write the draft ${flags.out}: ${exists ? 'the file exists (choose another name; nothing was overwritten)' : messageOf(error)}`);
      }
      if (!this.jsonEnabled()) this.log(`draft written to ${flags.out}: edit it, then send it where you report bugs (nothing was sent)`);
      return { file: flags.out, draft };
    }
    if (!this.jsonEnabled()) process.stdout.write(draft);
    return { file: null, draft };
  }
}
