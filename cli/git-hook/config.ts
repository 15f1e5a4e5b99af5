// The hook's settings, kept in the bare repository's git config (`svc.*` keys), so a server
// needs no extra files beyond the secret.
import { readFile } from 'node:fs/promises';
import { basename, isAbsolute, resolve } from 'node:path';
import { InputError, messageOf } from '../../core/errors.ts';
import type { HookGit } from './git.ts';

/** git config keys the hook reads (git lower-cases them; these are the documented spellings). */
export const HOOK_CONFIG_KEYS = {
  webhookUrl: 'svc.webhookUrl',
  secret: 'svc.secret',
  secretFile: 'svc.secretFile',
  sourceId: 'svc.sourceId',
  repository: 'svc.repository',
  remoteUrl: 'svc.remoteUrl',
  defaultBranch: 'svc.defaultBranch',
  pusher: 'svc.pusher',
  timeoutMs: 'svc.timeoutMs',
} as const;

export const DEFAULT_TIMEOUT_MS = 15_000;

export interface HookConfig {
  webhookUrl: string;
  secret: string;
  sourceId: string;
  /** `owner/name`. */
  repository: string;
  /** Clone URL agents use. */
  remoteUrl: string;
  defaultBranch: string;
  /** `svc.pusher`, when set. */
  pusher?: string;
  /** Whole-hook time budget. */
  timeoutMs: number;
}

export const SOURCE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
export const REPOSITORY = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\/[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

export function checkWebhookUrl(value: string, key: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError('SVC_ERR_HOOK_CONFIG', `${key} "${value.slice(0, 200)}" is not a URL (expected https://<platform>/webhook/<org_id>/git)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new InputError('SVC_ERR_HOOK_CONFIG', `${key} must be an http(s) URL`);
  if (url.username || url.password) throw new InputError('SVC_ERR_HOOK_CONFIG', `${key} must not carry credentials`);
  return url.href;
}

/** Every `svc.*` key of the repository, lower-cased names. */
async function svcKeys(git: HookGit): Promise<Map<string, string>> {
  const result = await git.tryRun(['config', '-z', '--get-regexp', '^svc\\.']);
  const out = new Map<string, string>();
  if (!result.ok) return out; // exit 1: no key matched
  for (const entry of result.stdout.split('\0')) {
    if (entry === '') continue;
    const newline = entry.indexOf('\n');
    const key = (newline < 0 ? entry : entry.slice(0, newline)).toLowerCase();
    out.set(key, newline < 0 ? '' : entry.slice(newline + 1));
  }
  return out;
}

/** Read and check the hook's configuration; a refusal names the key to set. */
export async function readHookConfig(git: HookGit): Promise<HookConfig> {
  const keys = await svcKeys(git);
  const get = (key: string) => {
    const v = keys.get(key.toLowerCase());
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  };
  const required = (key: string, what: string) => {
    const v = get(key);
    if (v === undefined) throw new InputError('SVC_ERR_HOOK_CONFIG', `${key} is not set in ${git.gitDir} (${what}); set it with \`git config ${key} <value>\` or run \`svc hook post-receive --install\``);
    return v;
  };
  const webhookUrl = checkWebhookUrl(required(HOOK_CONFIG_KEYS.webhookUrl, 'where pushes are sent'), HOOK_CONFIG_KEYS.webhookUrl);
  const sourceId = required(HOOK_CONFIG_KEYS.sourceId, 'the source id the orchestrator gave this repository');
  if (!SOURCE_ID.test(sourceId)) throw new InputError('SVC_ERR_HOOK_CONFIG', `${HOOK_CONFIG_KEYS.sourceId} must be a source id (letters, digits, '.', '_', '-')`);

  let secret: string | undefined;
  const secretFile = get(HOOK_CONFIG_KEYS.secretFile);
  if (secretFile !== undefined) {
    const path = isAbsolute(secretFile) ? secretFile : resolve(git.gitDir, secretFile);
    try {
      secret = (await readFile(path, 'utf8')).replace(/\r?\n$/, '');
    } catch (error) {
      throw new InputError('SVC_ERR_HOOK_SECRET', `${HOOK_CONFIG_KEYS.secretFile} ${path} cannot be read: ${messageOf(error)}`);
    }
  } else {
    secret = get(HOOK_CONFIG_KEYS.secret);
  }
  if (secret === undefined || secret === '') {
    throw new InputError('SVC_ERR_HOOK_SECRET', `no webhook secret: set ${HOOK_CONFIG_KEYS.secretFile} (a file holding the source secret) or ${HOOK_CONFIG_KEYS.secret}`);
  }

  const name = basename(git.gitDir === '.' ? process.cwd() : resolve(git.gitDir)).replace(/\.git$/, '') || 'repo';
  const repository = get(HOOK_CONFIG_KEYS.repository) ?? `local/${name.replace(/[^A-Za-z0-9_.-]/g, '-')}`;
  if (!REPOSITORY.test(repository)) throw new InputError('SVC_ERR_HOOK_CONFIG', `${HOOK_CONFIG_KEYS.repository} must be owner/name`);

  const remoteUrl = get(HOOK_CONFIG_KEYS.remoteUrl) ?? `file://${resolve(git.gitDir)}`;
  let defaultBranch = get(HOOK_CONFIG_KEYS.defaultBranch);
  if (defaultBranch === undefined) {
    const head = await git.tryRun(['symbolic-ref', '--quiet', '--short', 'HEAD']);
    defaultBranch = head.ok && head.stdout.trim() !== '' ? head.stdout.trim() : 'main';
  }
  const timeoutText = get(HOOK_CONFIG_KEYS.timeoutMs);
  const timeoutMs = timeoutText === undefined ? DEFAULT_TIMEOUT_MS : Number(timeoutText);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 100 || timeoutMs > 120_000) {
    throw new InputError('SVC_ERR_HOOK_CONFIG', `${HOOK_CONFIG_KEYS.timeoutMs} must be a whole number of milliseconds between 100 and 120000`);
  }
  const config: HookConfig = { webhookUrl, secret, sourceId, repository, remoteUrl, defaultBranch, timeoutMs };
  const pusher = get(HOOK_CONFIG_KEYS.pusher);
  if (pusher !== undefined) config.pusher = pusher;
  return config;
}
