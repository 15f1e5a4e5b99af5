// GitHub App authentication: an App JWT (via @octokit/auth-app) buys installation tokens, which
// are cached until shortly before GitHub's expiry and shared by concurrent callers.
//
// The token request is ours, not auth-app's `type: 'installation'` flow: auth-app (8.3.1) shares
// in-flight token requests through one map for the whole process, keyed by installation id alone,
// so two sources on different GitHub hosts (github.com and a GitHub Enterprise server) whose
// installation ids coincide got each other's token when they asked at the same moment, and sent
// it to the wrong host. Here in-flight requests are shared per host, App and installation.
import { createHash } from 'node:crypto';
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { AuthenticationError, NotFoundError, SvcError, UnavailableError, messageOf } from '../../../core/errors.ts';
import type { GithubSource } from './settings.ts';

const USER_AGENT = 'svc-github-provider';

export interface InstallationToken {
  token: string;
  expiresAt: Date;
}

export interface GithubAppClientOptions {
  logger: Logger;
  refreshMarginMs: number;
  requestTimeoutMs: number;
  /** Clock, for tests of expiry. */
  now?: () => number;
}

/** The App's JWT signer and a request bound to its API host. */
interface AppAuth {
  jwt: ReturnType<typeof createAppAuth>;
  request: Octokit['request'];
}

/** Octokit's `log`, sent to pino instead of the console. */
function octokitLog(logger: Logger) {
  return {
    debug: (message: string) => logger.debug(message),
    info: (message: string) => logger.debug(message),
    warn: (message: string) => logger.warn(message),
    error: (message: string) => logger.error(message),
  };
}

/** A foreign (Octokit, fetch) error as one of ours, with the status kept for callers. */
export function githubError(error: unknown, what: string): SvcError {
  if (error instanceof SvcError) return error;
  const status = (error as { status?: unknown } | null)?.status;
  const detail = messageOf(error).split('\n')[0]!.slice(0, 300);
  if (status === 401) return new AuthenticationError('SVC_ERR_GITHUB_AUTH', `${what}: GitHub refused the App credentials (401): ${detail}`, { cause: error });
  if (status === 403) return new AuthenticationError('SVC_ERR_GITHUB_FORBIDDEN', `${what}: GitHub refused access (403): ${detail}`, { cause: error });
  if (status === 404) return new NotFoundError('SVC_ERR_GITHUB_NOT_FOUND', `${what}: not found on GitHub (404)`, { cause: error });
  if (typeof status === 'number' && status < 500 && status !== 429) {
    return new SvcError('SVC_ERR_GITHUB_REQUEST', `${what}: GitHub answered ${status}: ${detail}`, { cause: error, details: { status } });
  }
  return new UnavailableError('SVC_ERR_GITHUB_UNAVAILABLE', `${what}: GitHub is unavailable: ${detail}`, { cause: error });
}

export class GithubAppClient {
  readonly #options: GithubAppClientOptions;
  readonly #now: () => number;
  /** App auth per source, keyed by what makes it differ (a rotated key gets a new one). */
  readonly #auths = new LRUCache<string, AppAuth>({ max: 1000 });
  readonly #tokens = new LRUCache<string, InstallationToken>({ max: 10_000 });
  readonly #pending = new Map<string, Promise<InstallationToken>>();

  constructor(options: GithubAppClientOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  #appAuth(source: GithubSource): AppAuth {
    const key = createHash('sha256').update(`${source.apiBaseUrl}\0${source.appId}\0${source.privateKey}`).digest('hex');
    let auth = this.#auths.get(key);
    if (!auth) {
      const request = new Octokit({ baseUrl: source.apiBaseUrl, userAgent: USER_AGENT, log: octokitLog(this.#options.logger) }).request;
      auth = { jwt: createAppAuth({ appId: source.appId, privateKey: source.privateKey, request, log: octokitLog(this.#options.logger) }), request };
      this.#auths.set(key, auth);
    }
    return auth;
  }

  /** An Octokit speaking as the App itself (JWT), for App-level routes. */
  appOctokit(source: GithubSource): Octokit {
    return new Octokit({
      baseUrl: source.apiBaseUrl,
      userAgent: USER_AGENT,
      log: octokitLog(this.#options.logger),
      authStrategy: createAppAuth,
      auth: { appId: source.appId, privateKey: source.privateKey },
      request: { signal: AbortSignal.timeout(this.#options.requestTimeoutMs) },
    });
  }

  /** An installation token, from the cache while it has more than the refresh margin left. */
  async installationToken(source: GithubSource, installationId: string): Promise<InstallationToken> {
    const key = `${source.apiBaseUrl}\0${source.appId}\0${installationId}`;
    const cached = this.#tokens.get(key);
    if (cached && cached.expiresAt.getTime() - this.#options.refreshMarginMs > this.#now()) return cached;
    const inFlight = this.#pending.get(key);
    if (inFlight) return inFlight;
    const fetching = this.#fetchToken(source, installationId).then((token) => {
      this.#tokens.set(key, token);
      return token;
    });
    const tracked = fetching.finally(() => this.#pending.delete(key));
    this.#pending.set(key, tracked);
    return tracked;
  }

  async #fetchToken(source: GithubSource, installationId: string): Promise<InstallationToken> {
    const { jwt, request } = this.#appAuth(source);
    let result: { token?: unknown; expires_at?: unknown };
    try {
      const { token } = await jwt({ type: 'app' });
      const response = await request('POST /app/installations/{installation_id}/access_tokens', {
        installation_id: Number(installationId),
        headers: { authorization: `bearer ${token}` },
        request: this.requestOptions(),
      });
      result = response.data as { token?: unknown; expires_at?: unknown };
    } catch (error) {
      throw githubError(error, `installation token for App ${source.appId}, installation ${installationId}`);
    }
    const expiresAt = new Date(String(result.expires_at));
    if (typeof result.token !== 'string' || result.token === '' || Number.isNaN(expiresAt.getTime())) {
      throw new UnavailableError('SVC_ERR_GITHUB_TOKEN_RESPONSE', `GitHub returned no usable installation token for installation ${installationId}`);
    }
    this.#options.logger.debug({ source: source.id, installationId, expiresAt: expiresAt.toISOString() }, 'installation token issued');
    return { token: result.token, expiresAt };
  }

  /** An Octokit acting as the installation (repository reads). */
  async installationOctokit(source: GithubSource, installationId: string): Promise<Octokit> {
    const { token } = await this.installationToken(source, installationId);
    return new Octokit({ baseUrl: source.apiBaseUrl, userAgent: USER_AGENT, auth: token, log: octokitLog(this.#options.logger) });
  }

  /** Per-request options: the time limit. */
  requestOptions(): { signal: AbortSignal } {
    return { signal: AbortSignal.timeout(this.#options.requestTimeoutMs) };
  }

  /** Forget cached tokens (on close). */
  clear(): void {
    this.#tokens.clear();
    this.#auths.clear();
  }
}
