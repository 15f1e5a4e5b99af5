// Shapes the `github` provider reads: its config slice (`provider:github`), each source's
// settings (checked when an operator adds a source) and each source's opened credentials.
import { Type, type Static } from 'typebox';
import type { ProviderSource, RepositoryRef } from '../../../core/extension-points/provider.ts';
import { InputError } from '../../../core/errors.ts';
import { compileSchema, formatIssues } from '../../../schemas/validate.ts';

export const DEFAULT_API_BASE_URL = 'https://api.github.com';
const HTTP_URL = '^https?://[^\\s?#]+$';

export const GithubProviderConfig = Type.Object(
  {
    /** Installation tokens are renewed this long before GitHub's expiry (tokens live one hour). */
    tokenRefreshMarginMs: Type.Integer({ minimum: 0, maximum: 30 * 60_000, default: 5 * 60_000 }),
    /** Time limit for each GitHub API request. */
    requestTimeoutMs: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
    /** Largest lock file accepted from the contents API. */
    maxLockFileBytes: Type.Integer({ minimum: 1, default: 32 * 1024 * 1024 }),
  },
  { additionalProperties: false },
);
export type GithubProviderConfig = Static<typeof GithubProviderConfig>;

export const GithubSourceSettings = Type.Object(
  {
    /** The GitHub App's id (`X-GitHub-Hook-Installation-Target-ID`); the routing key is `github:<appId>`. */
    appId: Type.Union([Type.String({ pattern: '^[1-9][0-9]{0,19}$' }), Type.Integer({ minimum: 1 })]),
    /** REST API root; GitHub Enterprise Server uses `https://<host>/api/v3`. */
    apiBaseUrl: Type.Optional(Type.String({ pattern: HTTP_URL, maxLength: 2048 })),
    /** Web root for clone URLs when the payload carries none (default `https://github.com`). */
    webBaseUrl: Type.Optional(Type.String({ pattern: HTTP_URL, maxLength: 2048 })),
    /** Report each run as a check run on its commit (default true; the App needs `checks: write`). */
    checkRuns: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type GithubSourceSettings = Static<typeof GithubSourceSettings>;

const settingsCheck = compileSchema(GithubSourceSettings);

export interface GithubSource {
  id: string;
  appId: string;
  apiBaseUrl: string;
  webBaseUrl: string;
  privateKey: string;
  /** Runs are reported as check runs (`settings.checkRuns`, default true). */
  checkRuns: boolean;
}

const PEM = /^-----BEGIN (RSA )?PRIVATE KEY-----[\s\S]+-----END (RSA )?PRIVATE KEY-----\s*$/;

/** Settings and credentials of one source, checked; refusals name the field. */
export function githubSourceOf(source: ProviderSource): GithubSource {
  const result = settingsCheck.validate(source.settings);
  if (!result.ok) {
    throw new InputError('SVC_ERR_GITHUB_SOURCE_SETTINGS', `source ${source.id}: settings are invalid: ${formatIssues(result.issues)}`);
  }
  const privateKey = source.credentials['privateKey'];
  if (typeof privateKey !== 'string' || !PEM.test(privateKey.trim())) {
    throw new InputError(
      'SVC_ERR_GITHUB_SOURCE_CREDENTIALS',
      `source ${source.id}: credentials.privateKey must be the GitHub App's private key in PEM form (-----BEGIN RSA PRIVATE KEY-----)`,
    );
  }
  const apiBaseUrl = (result.value.apiBaseUrl ?? DEFAULT_API_BASE_URL).replace(/\/+$/, '');
  const webBaseUrl = (result.value.webBaseUrl ?? (apiBaseUrl === DEFAULT_API_BASE_URL ? 'https://github.com' : apiBaseUrl.replace(/\/api\/v3$/, ''))).replace(/\/+$/, '');
  return { id: source.id, appId: String(result.value.appId), apiBaseUrl, webBaseUrl, privateKey: privateKey.trim() + '\n', checkRuns: result.value.checkRuns !== false };
}

const NAME_PART = /^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,100}$/;

/** `owner` and `repo` from `owner/name`; anything else is refused before it reaches a URL. */
export function ownerAndRepo(repository: RepositoryRef): { owner: string; repo: string } {
  const parts = repository.fullName.split('/');
  if (parts.length !== 2 || !NAME_PART.test(parts[0]!) || !NAME_PART.test(parts[1]!)) {
    throw new InputError('SVC_ERR_GITHUB_REPOSITORY', `repository "${repository.fullName.slice(0, 200)}" is not an owner/name GitHub repository`);
  }
  return { owner: parts[0]!, repo: parts[1]! };
}

const SHA = /^[0-9a-f]{40}$/;

/** A commit sha as the API takes it; anything else is refused. */
export function checkSha(value: string, what: string): string {
  if (typeof value !== 'string' || !SHA.test(value)) {
    throw new InputError('SVC_ERR_GITHUB_SHA', `${what} must be a 40-character lower-case hex commit sha`);
  }
  return value;
}

export const ZERO_SHA = '0'.repeat(40);
