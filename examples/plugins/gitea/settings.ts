// Shapes this provider reads: its config slice (`provider:gitea` in the orchestrator's
// `plugins.config`), each source's settings (checked when an operator adds a source) and each
// source's sealed credentials. Webhook secrets are not here: the kernel keeps them per source
// and checks signatures itself.
import { pluginError, type ProviderSource, type RepositoryRef } from 'svc/plugin';
import { compileSchema, formatIssues } from 'svc/schemas/validate';
import { Type, type Static } from 'typebox';

export const GiteaProviderConfig = Type.Object(
  {
    /** Time limit for each Gitea API request. */
    requestTimeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
    /** Largest lock file accepted from the contents API. */
    maxLockFileBytes: Type.Integer({ minimum: 1, default: 32 * 1024 * 1024 }),
    /** Largest file `readFile` returns (content requirements read small files). */
    maxReadFileBytes: Type.Integer({ minimum: 1, default: 4 * 1024 * 1024 }),
  },
  { additionalProperties: false },
);
export type GiteaProviderConfig = Static<typeof GiteaProviderConfig>;

export const GiteaSourceSettings = Type.Object(
  {
    /** Web root of the Gitea or Forgejo instance (`https://git.example.com`, or with a sub-path). */
    baseUrl: Type.String({ pattern: '^https?://[^\\s?#]+$', maxLength: 2048 }),
  },
  { additionalProperties: false },
);
export type GiteaSourceSettings = Static<typeof GiteaSourceSettings>;

const settingsCheck = compileSchema(GiteaSourceSettings);

/** One source, checked: where its Gitea lives and the token that reads it. */
export interface GiteaSource {
  id: string;
  /** Web root without a trailing slash; the API is under `/api/v1`. */
  baseUrl: string;
  apiUrl: string;
  token: string;
  /** User name for git over https; Gitea checks the token, not the name. */
  username: string;
}

const CONTROL = /[\x00-\x1f\x7f]/;

/** Settings and credentials of one source; refusals name the field. */
export function giteaSourceOf(source: ProviderSource): GiteaSource {
  const result = settingsCheck.validate(source.settings);
  if (!result.ok) {
    throw pluginError('input', 'SVC_ERR_GITEA_SOURCE_SETTINGS', `source ${source.id}: settings are invalid: ${formatIssues(result.issues)}`);
  }
  const token = source.credentials['token'];
  if (typeof token !== 'string' || token === '' || CONTROL.test(token) || /\s/.test(token)) {
    throw pluginError('input', 'SVC_ERR_GITEA_SOURCE_CREDENTIALS', `source ${source.id}: credentials.token must be a Gitea access token (add it with --credential token=<token>)`);
  }
  const username = source.credentials['username'] ?? 'svc';
  if (!/^[^\s:\x00-\x1f\x7f]{1,256}$/.test(username)) {
    throw pluginError('input', 'SVC_ERR_GITEA_SOURCE_CREDENTIALS', `source ${source.id}: credentials.username must be a name without spaces or ':'`);
  }
  const baseUrl = result.value.baseUrl.replace(/\/+$/, '');
  return { id: source.id, baseUrl, apiUrl: `${baseUrl}/api/v1`, token, username };
}

const NAME_PART = /^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,100}$/;

/** `owner` and `repo` of `owner/name`; anything else is refused before it reaches a URL. */
export function ownerAndRepo(repository: RepositoryRef): { owner: string; repo: string } {
  const parts = repository.fullName.split('/');
  if (parts.length !== 2 || !NAME_PART.test(parts[0]!) || !NAME_PART.test(parts[1]!)) {
    throw pluginError('input', 'SVC_ERR_GITEA_REPOSITORY', `repository "${repository.fullName.slice(0, 200)}" is not an owner/name Gitea repository`);
  }
  return { owner: parts[0]!, repo: parts[1]! };
}

const SHA = /^[0-9a-f]{40}$|^[0-9a-f]{64}$/;
export const ZERO_SHA = /^0+$/;

/** A commit id as the API takes it (SHA-1, or SHA-256 for Gitea's sha256 repositories). */
export function checkSha(value: unknown, what: string): string {
  if (typeof value !== 'string' || !SHA.test(value)) {
    throw pluginError('input', 'SVC_ERR_GITEA_SHA', `${what} must be a lower-case hex commit id (40 or 64 characters)`);
  }
  return value;
}

/**
 * A repository-relative path as a trigger's `requires` names it: plain segments only, so a path
 * from a lock file can never climb out of the repository or smuggle a query into the URL.
 */
export function checkRepositoryPath(path: unknown): string {
  const fail = (why: string): never => {
    throw pluginError('input', 'SVC_ERR_GITEA_PATH_INVALID', `file path ${JSON.stringify(String(path).slice(0, 200))} is not a repository-relative path: ${why}`);
  };
  if (typeof path !== 'string' || path.length === 0) return fail('it is empty');
  if (path.length > 4096) return fail('it is longer than 4096 characters');
  if (CONTROL.test(path) || path.includes('\\')) return fail('it holds a control character or a backslash');
  if (path.startsWith('/')) return fail('it is absolute');
  if (path.startsWith('-')) return fail('it starts with "-"');
  if (path.split('/').some((s) => s === '' || s === '.' || s === '..')) return fail('it has an empty, "." or ".." segment');
  return path;
}
