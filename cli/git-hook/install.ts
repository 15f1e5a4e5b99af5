// `svc hook post-receive --install`: write the `svc.*` git config of a bare repository and an
// executable `hooks/post-receive` that runs this very `svc` with this very Node, by absolute
// paths, so the hook works for a git daemon or sshd that has neither on PATH.
import { randomBytes } from 'node:crypto';
import { chmod, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join, resolve } from 'node:path';
import { ConflictError, InputError, messageOf } from '../../core/errors.ts';
import { checkWebhookUrl, HOOK_CONFIG_KEYS, REPOSITORY, SOURCE_ID } from './config.ts';
import { hookGit } from './git.ts';

/** First line after the shebang of every hook we write; an existing hook without it is not ours. */
export const HOOK_MARKER = '# svc post-receive hook';

export interface InstallHookOptions {
  /** The bare repository. */
  repo: string;
  webhookUrl: string;
  /** File holding the source's webhook secret (stored as an absolute path, never copied). */
  secretFile: string;
  sourceId: string;
  repository?: string;
  remoteUrl?: string;
  /** Replace a post-receive hook that svc did not write. */
  force?: boolean;
  /** `[node, svc bin]`; defaults to this process's Node and this package's bin. */
  command?: readonly [string, string];
}

export interface InstallHookResult {
  repo: string;
  hookPath: string;
  config: Record<string, string>;
  command: [string, string];
}

/** This package's `svc` bin, next to the sources (`bin/svc.ts`) or in the compiled tree (`dist/bin/svc.js`). */
export function svcBinPath(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`../../bin/svc${ext}`, import.meta.url));
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

export function hookScript(command: readonly [string, string]): string {
  return [
    '#!/bin/sh',
    HOOK_MARKER,
    '# Written by `svc hook post-receive --install`; installing again overwrites it.',
    "# Sends each pushed branch or tag to CI as a signed push webhook; settings: git config --get-regexp '^svc\\.'",
    `exec ${shellQuote(command[0])} ${shellQuote(command[1])} hook post-receive`,
    '',
  ].join('\n');
}

export async function installPostReceiveHook(options: InstallHookOptions): Promise<InstallHookResult> {
  const repo = resolve(options.repo);
  const git = hookGit(repo);
  const bare = await git.tryRun(['rev-parse', '--is-bare-repository']);
  if (!bare.ok || bare.stdout.trim() !== 'true') {
    throw new InputError('SVC_ERR_HOOK_NOT_BARE', `${repo} is not a bare git repository (the repository a server pushes into; create one with git init --bare)`);
  }
  const webhookUrl = checkWebhookUrl(options.webhookUrl, '--webhook-url');
  if (!SOURCE_ID.test(options.sourceId)) throw new InputError('SVC_ERR_HOOK_CONFIG', '--source-id must be the source id (letters, digits, ".", "_", "-")');
  const repository = options.repository ?? `local/${repo.split('/').pop()!.replace(/\.git$/, '').replace(/[^A-Za-z0-9_.-]/g, '-') || 'repo'}`;
  if (!REPOSITORY.test(repository)) throw new InputError('SVC_ERR_HOOK_CONFIG', '--repository must be owner/name');
  const remoteUrl = options.remoteUrl ?? `file://${repo}`;
  if (remoteUrl.startsWith('-') || /[\s\x00-\x1f\x7f]/.test(remoteUrl)) throw new InputError('SVC_ERR_HOOK_CONFIG', '--remote-url must be a clone URL without spaces');
  const secretFile = resolve(options.secretFile);
  let secret: string;
  try {
    secret = (await readFile(secretFile, 'utf8')).replace(/\r?\n$/, '');
  } catch (error) {
    throw new InputError('SVC_ERR_HOOK_SECRET', `--secret-file ${secretFile} cannot be read: ${messageOf(error)}`);
  }
  if (secret === '') throw new InputError('SVC_ERR_HOOK_SECRET', `--secret-file ${secretFile} is empty`);

  const hooksPath = await git.tryRun(['config', '--get', 'core.hooksPath']);
  const hooksDir = hooksPath.ok && hooksPath.stdout.trim() !== '' ? resolve(repo, hooksPath.stdout.trim()) : join(repo, 'hooks');
  const hookPath = join(hooksDir, 'post-receive');
  const existing = await readFile(hookPath, 'utf8').catch(() => null);
  if (existing !== null && !existing.includes(HOOK_MARKER) && options.force !== true) {
    throw new ConflictError('SVC_ERR_HOOK_EXISTS', `${hookPath} exists and was not written by svc; move it aside or pass --force to replace it`);
  }
  await stat(hooksDir).catch(() => {
    throw new InputError('SVC_ERR_HOOK_NOT_BARE', `${hooksDir} does not exist`);
  });

  const config: Record<string, string> = {
    [HOOK_CONFIG_KEYS.webhookUrl]: webhookUrl,
    [HOOK_CONFIG_KEYS.secretFile]: secretFile,
    [HOOK_CONFIG_KEYS.sourceId]: options.sourceId,
    [HOOK_CONFIG_KEYS.repository]: repository,
    [HOOK_CONFIG_KEYS.remoteUrl]: remoteUrl,
  };
  // Every value was checked above and none starts with "-".
  for (const [key, value] of Object.entries(config)) await git.run(['config', key, value]);
  // A secret kept in the config would win over nothing now, but must not linger there.
  await git.tryRun(['config', '--unset', HOOK_CONFIG_KEYS.secret]);

  const command: [string, string] = options.command ? [options.command[0], options.command[1]] : [process.execPath, svcBinPath()];
  const temp = `${hookPath}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temp, hookScript(command), { mode: 0o755 });
  await chmod(temp, 0o755);
  await rename(temp, hookPath);
  return { repo, hookPath, config, command };
}
