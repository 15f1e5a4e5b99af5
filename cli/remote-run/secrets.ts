// The secrets a remote run takes from this machine (spec "Authentication" 8): `.svc/.secrets`,
// `.svc/.env.local` (dotenv, cli/local-run/secrets.ts), `.svc/secrets.yaml` (`KEY: value`, or
// `<context>: { KEY: value }` for `<context>:KEY`), then `--env KEY=VALUE` and
// `--context <ctx>.<KEY>=<value>` (later wins). They are sealed to the orchestrator's key and
// win over the orchestrator's test-context secrets on the same key.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { InputError, messageOf } from '../../core/errors.ts';
import { USAGE_ERROR_CODE } from '../../core/cli/base-command.ts';
import { loadLocalSecrets, parseEnvFlags } from '../local-run/secrets.ts';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CONTEXT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

async function yamlSecrets(root: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(join(root, '.svc', 'secrets.yaml'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new InputError('SVC_ERR_LOCAL_SECRETS_READ', `cannot read .svc/secrets.yaml: ${messageOf(error)}`);
  }
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (error) {
    throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', `.svc/secrets.yaml: ${messageOf(error).split('\n')[0]}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', '.svc/secrets.yaml must be a map of KEY: value (or context: { KEY: value })');
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(doc)) {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [inner, v] of Object.entries(value)) {
        if (!NAME.test(inner) || (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean')) throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', `.svc/secrets.yaml: ${key}.${inner} must be a NAME with a text value`);
        out[`${key}:${inner}`] = String(v);
      }
    } else if (NAME.test(key) && (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')) {
      out[key] = String(value);
    } else {
      throw new InputError('SVC_ERR_LOCAL_SECRETS_SYNTAX', `.svc/secrets.yaml: ${key} must be a NAME with a text value, or a context with a map`);
    }
  }
  return out;
}

/** `--context <ctx>.<KEY>=<value>` → `<ctx>:<KEY>`. */
export function parseContextFlags(flags: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const flag of flags) {
    const eq = flag.indexOf('=');
    const target = eq < 0 ? flag : flag.slice(0, eq);
    const dot = target.lastIndexOf('.');
    const context = target.slice(0, Math.max(0, dot));
    const key = target.slice(dot + 1);
    if (eq <= 0 || dot <= 0 || !CONTEXT.test(context) || !NAME.test(key)) {
      throw new InputError(USAGE_ERROR_CODE, `--context ${JSON.stringify(flag.slice(0, 80))}: expected <context>.<KEY>=<value>`);
    }
    out[`${context}:${key}`] = flag.slice(eq + 1);
  }
  return out;
}

export async function remoteSecrets(root: string, envFlags: readonly string[], contextFlags: readonly string[]): Promise<Record<string, string>> {
  const files = await loadLocalSecrets(root, []);
  const yaml = await yamlSecrets(root);
  return { ...yaml, ...files.values, ...parseEnvFlags(envFlags), ...parseContextFlags(contextFlags) };
}
