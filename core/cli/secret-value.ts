// Where a secret value typed at a CLI comes from — `--value`, `--value-file` or standard input —
// shared by `svc secrets set` and `svc-admin secret set`. One trailing newline of a file or of
// stdin is dropped (editors and `echo` add one); the value itself is never printed.
import { readFile } from 'node:fs/promises';
import { InputError, messageOf } from '../errors.ts';
import { USAGE_ERROR_CODE } from './base-command.ts';

export interface SecretValueFlags {
  value?: string | undefined;
  'value-file'?: string | undefined;
}

function dropOneNewline(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

async function readStdin(maxBytes: number): Promise<string> {
  if (process.stdin.isTTY) throw new InputError(USAGE_ERROR_CODE, 'give the value with --value, --value-file or on standard input (not a terminal)');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    // The newline that may still be dropped is not counted against the limit.
    if (size > maxBytes + 2) throw new InputError('SVC_ERR_SECRETS_VALUE', `a secret value must be at most ${maxBytes} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The value the flags name. `dashReadsStdin`: `--value -` means standard input (the developer
 * CLI) rather than the one-character value "-".
 */
export async function readSecretValue(flags: SecretValueFlags, options: { maxBytes: number; dashReadsStdin: boolean }): Promise<string> {
  const literal = flags.value !== undefined && !(options.dashReadsStdin && flags.value === '-');
  if (literal) return flags.value as string;
  const file = flags['value-file'];
  if (file !== undefined) {
    try {
      return dropOneNewline(await readFile(file, 'utf8'));
    } catch (error) {
      throw new InputError('SVC_ERR_SECRETS_VALUE', `--value-file ${file} could not be read: ${messageOf(error)}`);
    }
  }
  return dropOneNewline(await readStdin(options.maxBytes));
}
