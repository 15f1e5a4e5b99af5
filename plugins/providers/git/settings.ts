// Shapes the `git` provider reads: its config slice (`provider:git`), each source's settings
// and its optional https credentials. Remote URLs are checked strictly: whatever reaches git
// must be a plain location, never an option or a helper transport (`ext::`, `fd::`).
import { Type, type Static } from 'typebox';
import type { ProviderSource } from '../../../core/extension-points/provider.ts';
import { InputError } from '../../../core/errors.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';

export const GitProviderConfig = Type.Object(
  {
    /** Directory holding one bare mirror per source (`<dataDir>/git-cache`). */
    cacheDir: Type.String({ minLength: 1, maxLength: 4096 }),
    /** Time limit for one `git fetch`. */
    fetchTimeoutMs: Type.Integer({ minimum: 1000, maximum: 30 * 60_000, default: 120_000 }),
    /** Time limit for local git reads (show, diff). */
    readTimeoutMs: Type.Integer({ minimum: 100, maximum: 10 * 60_000, default: 30_000 }),
    /** Largest lock file read from a repository. */
    maxLockFileBytes: Type.Integer({ minimum: 1, default: 32 * 1024 * 1024 }),
    /** Most long-lived `git cat-file` processes open at once (one per mirror in use). */
    catFileProcesses: Type.Integer({ minimum: 1, maximum: 1024, default: 16 }),
    /** A mirror's cat-file process unused this long is closed. */
    catFileIdleMs: Type.Integer({ minimum: 100, maximum: 24 * 3600_000, default: 300_000 }),
    /**
     * A remote on this machine (an absolute path or file:///): read its objects in place instead
     * of fetching them first (the mirror still fetches what it cannot find there).
     */
    borrowLocalObjects: Type.Boolean({ default: true }),
    /** The git program. */
    gitBinary: Type.String({ minLength: 1, maxLength: 4096, default: 'git' }),
  },
  { additionalProperties: false },
);
export type GitProviderConfig = Static<typeof GitProviderConfig>;

export const GitSourceSettings = Type.Object(
  {
    /** Where git fetches from: https://, http://, ssh://, git://, file:///, user@host:path or an absolute path. */
    remoteUrl: Type.String({ minLength: 1, maxLength: 4096 }),
    /** `owner/name` shown in runs; must match the pushed payload's `repository.full_name`. */
    repository: Type.String({ pattern: '^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$' }),
    defaultBranch: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type GitSourceSettings = Static<typeof GitSourceSettings>;

const settingsCheck = compileSchema(GitSourceSettings);

const URL_FORM = /^(https?|ssh|git):\/\/([A-Za-z0-9._~%-]+@)?[A-Za-z0-9[][^\s/@]*(\/\S*)?$/;
const FILE_FORM = /^file:\/\/\/\S*$/;
const PATH_FORM = /^\/\S*$/;
const SCP_FORM = /^[A-Za-z0-9_][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:(?!\/\/)\S+$/;
const CONTROL = /[\x00-\x1f\x7f]/;

/** Why a remote URL is refused, or null when git may fetch it. */
export function remoteUrlProblem(url: string): string | null {
  if (CONTROL.test(url) || /\s/.test(url)) return 'must not contain spaces or control characters';
  if (url.startsWith('-')) return 'must not start with "-"';
  if (/^[A-Za-z][A-Za-z0-9+.-]*::/.test(url)) return 'must not name a remote helper transport (such as ext::)';
  if (/^https?:\/\/[^/@]*:[^/@]*@/.test(url)) return 'must not carry a password; put the token in the source credentials';
  if (URL_FORM.test(url) || FILE_FORM.test(url) || PATH_FORM.test(url) || SCP_FORM.test(url)) return null;
  return 'must be an https://, http://, ssh://, git:// or file:/// URL, user@host:path, or an absolute path';
}

export interface GitSource {
  id: string;
  remoteUrl: string;
  repository: string;
  defaultBranch?: string;
  /** HTTP basic credentials, only ever sent to http(s) remotes. */
  username?: string;
  token?: string;
}

/** Settings and credentials of one source, checked; refusals name the field. */
export function gitSourceOf(source: ProviderSource): GitSource {
  const result = settingsCheck.validate(source.settings);
  if (!result.ok) {
    throw new InputError('SVC_ERR_GIT_SOURCE_SETTINGS', `source ${source.id}: settings are invalid: ${formatIssues(result.issues)}`);
  }
  const problem = remoteUrlProblem(result.value.remoteUrl);
  if (problem) throw new InputError('SVC_ERR_GIT_REMOTE_URL', `source ${source.id}: remoteUrl ${problem}`);
  const out: GitSource = { id: source.id, remoteUrl: result.value.remoteUrl, repository: result.value.repository };
  if (result.value.defaultBranch !== undefined) out.defaultBranch = result.value.defaultBranch;
  const { token, username } = source.credentials;
  if (token !== undefined) {
    if (typeof token !== 'string' || token === '' || CONTROL.test(token)) {
      throw new InputError('SVC_ERR_GIT_SOURCE_CREDENTIALS', `source ${source.id}: credentials.token must be a non-empty single-line string`);
    }
    out.token = token;
  }
  if (username !== undefined) {
    if (typeof username !== 'string' || !/^[^\s:\x00-\x1f\x7f]{1,256}$/.test(username)) {
      throw new InputError('SVC_ERR_GIT_SOURCE_CREDENTIALS', `source ${source.id}: credentials.username must be a non-empty name without spaces or ':'`);
    }
    out.username = username;
  }
  return out;
}

const SHA = /^[0-9a-f]{40}$/;
export const ZERO_SHA = '0'.repeat(40);

/**
 * A commit sha exactly as git prints it. Anything else (a ref name, an option such as
 * `--upload-pack=…`, shell text) is refused before git runs.
 */
export function checkSha(value: unknown, what: string): string {
  if (typeof value !== 'string' || !SHA.test(value)) {
    throw new InputError('SVC_ERR_GIT_SHA', `${what} must be a 40-character lower-case hex commit sha`);
  }
  return value;
}

/**
 * The pushed ref when git itself would accept it as a branch or tag name (`git check-ref-format`'s
 * rules under `refs/heads/` or `refs/tags/`), else null. It becomes one fetch refspec
 * (`+<ref>:<ref>`) as an argument of its own: these rules leave no leading `-` or `+`, no `:`, no
 * glob and no `^`, so it can only ever name that one ref.
 */
export function fetchableRef(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 1024) return null;
  if (!/^refs\/(heads|tags)\/./.test(value)) return null;
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\/\/|\/$|\.$/.test(value)) return null;
  if (value.split('/').some((part) => part.startsWith('.') || part.endsWith('.lock'))) return null;
  return value;
}
