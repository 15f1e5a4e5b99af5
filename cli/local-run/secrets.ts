// Secrets for `svc run <event> --local`: `.svc/.secrets`, then `.svc/.env.local`, then each
// `--env KEY=VALUE` (later sources win on the same key). Files are dotenv-style: `KEY=VALUE`
// lines, `#` comments, blank lines, an optional `export ` prefix, values optionally in single
// or double quotes (double quotes understand \n, \t, \\ and \"). A key is a name
// (`API_KEY`) or a context-qualified name (`deploy:API_KEY`). The values reach steps through
// `ctx.secrets.get` and are masked in every printed line; they are not put in the environment.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError, messageOf } from '../../core/errors.ts';
import { USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';

export const SECRET_FILES = ['.secrets', '.env.local'] as const;
const KEY = /^(?:[A-Za-z0-9_.-]+:)?[A-Za-z_][A-Za-z0-9_]*$/;

function unquote(raw: string, where: string): string {
  const value = raw.trim();
  if (value.startsWith('"')) {
    if (!value.endsWith('"') || value.length < 2) throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', `${where}: unterminated double quote`);
    return value.slice(1, -1).replace(/\\([nt"\\])/g, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c));
  }
  if (value.startsWith("'")) {
    if (!value.endsWith("'") || value.length < 2) throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', `${where}: unterminated single quote`);
    return value.slice(1, -1);
  }
  // Unquoted: a ` #` starts a comment.
  return value.replace(/\s+#.*$/, '');
}

/** Parses a dotenv-style file's text; `name` labels errors (`.svc/.secrets line 3`). */
export function parseSecretsText(text: string, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const where = `${name} line ${index + 1}`;
    const body = trimmed.startsWith('export ') ? trimmed.slice('export '.length).trimStart() : trimmed;
    const eq = body.indexOf('=');
    if (eq <= 0) throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', `${where}: expected KEY=VALUE`);
    const key = body.slice(0, eq).trim();
    if (!KEY.test(key)) throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', `${where}: ${JSON.stringify(key.slice(0, 80))} is not a valid secret name (letters, digits, _; optionally <context>:NAME)`);
    out[key] = unquote(body.slice(eq + 1), where);
  }
  return out;
}

/** `--env KEY=VALUE` flags. */
export function parseEnvFlags(flags: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    const key = eq < 0 ? flag : flag.slice(0, eq);
    if (eq <= 0 || !KEY.test(key)) throw new InputError(USAGE_ERROR_CODE, `--env ${JSON.stringify(flag.slice(0, 80))}: expected KEY=VALUE with KEY made of letters, digits and _ (optionally <context>:KEY)`);
    out[key] = flag.slice(eq + 1);
  }
  return out;
}

export interface LocalSecrets {
  values: Record<string, string>;
  /** Where each key came from (`.svc/.secrets`, `.svc/.env.local`, `--env`); never the values. */
  sources: Record<string, string>;
}

export async function loadLocalSecrets(repoRoot: string, envFlags: readonly string[]): Promise<LocalSecrets> {
  const values: Record<string, string> = {};
  const sources: Record<string, string> = {};
  for (const file of SECRET_FILES) {
    const label = `.svc/${file}`;
    let text: string;
    try {
      text = await readFile(join(repoRoot, '.svc', file), 'utf8');
    } catch (error) {
      if ((error as { code?: unknown }).code === 'ENOENT') continue;
      throw new InputError('SVC_ERR_LOCAL_SECRETS_READ', `cannot read ${label}: ${messageOf(error)}`);
    }
    for (const [k, v] of Object.entries(parseSecretsText(text, label))) {
      values[k] = v;
      sources[k] = label;
    }
  }
  for (const [k, v] of Object.entries(parseEnvFlags(envFlags))) {
    values[k] = v;
    sources[k] = '--env';
  }
  return { values, sources };
}
