// Repository reads through the GitHub REST API as an App installation: the lock file at a sha
// (contents API), files changed between two commits (compare API) and clone credentials.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { CheckoutCredentials, ProviderSource, RepositoryRef } from '../../../core/extension-points/provider.ts';
import { InputError, NotFoundError, SvcError, UnavailableError } from '../../../core/errors.ts';
import { GithubAppClient, githubError } from './app-client.ts';
import { checkRepositoryPath, MAX_READ_FILE_BYTES } from './repository-path.ts';
import { checkSha, githubSourceOf, ownerAndRepo, ZERO_SHA, type GithubProviderConfig, type GithubSource } from './settings.ts';

export const LOCK_FILE_PATH = '.svc/svc.lock.json';
/** Pages of a compare or commit listing read at most (100 files a page). */
const MAX_PAGES = 30;
const INSTALLATION_ID = /^[1-9][0-9]{0,19}$/;

export class GithubRepositoryApi {
  readonly #client: GithubAppClient;
  readonly #config: GithubProviderConfig;
  readonly #logger: Logger;
  /** `owner/name` → installation id, for repository refs that arrive without one (re-runs). */
  readonly #installations = new LRUCache<string, string>({ max: 10_000, ttl: 60 * 60_000 });

  constructor(options: { client: GithubAppClient; config: GithubProviderConfig; logger: Logger }) {
    this.#client = options.client;
    this.#config = options.config;
    this.#logger = options.logger;
  }

  /**
   * The installation a repository is read through: `RepositoryRef.installationId` (the payload's
   * `installation.id`, as a decimal string) when present, else looked up with the App JWT.
   */
  async installationIdOf(source: GithubSource, repository: RepositoryRef): Promise<string> {
    if (repository.installationId !== undefined && repository.installationId !== '') {
      if (!INSTALLATION_ID.test(repository.installationId)) {
        throw new InputError('SVC_ERR_GITHUB_INSTALLATION_ID', `installation id "${String(repository.installationId).slice(0, 40)}" must be a positive decimal number`);
      }
      return repository.installationId;
    }
    const { owner, repo } = ownerAndRepo(repository);
    const key = `${source.apiBaseUrl}\0${source.appId}\0${owner}/${repo}`.toLowerCase();
    const known = this.#installations.get(key);
    if (known) return known;
    try {
      const response = await this.#client.appOctokit(source).request('GET /repos/{owner}/{repo}/installation', { owner, repo });
      const id = String((response.data as { id?: unknown }).id ?? '');
      if (!INSTALLATION_ID.test(id)) throw new UnavailableError('SVC_ERR_GITHUB_INSTALLATION_RESPONSE', `GitHub returned no installation id for ${owner}/${repo}`);
      this.#installations.set(key, id);
      return id;
    } catch (error) {
      const mapped = githubError(error, `installation of App ${source.appId} on ${owner}/${repo}`);
      if (mapped instanceof NotFoundError) {
        throw new NotFoundError('SVC_ERR_GITHUB_NOT_INSTALLED', `GitHub App ${source.appId} is not installed on ${owner}/${repo}`, { cause: error });
      }
      throw mapped;
    }
  }

  async fetchLockFile(request: { source: ProviderSource; repository: RepositoryRef; sha: string }): Promise<Uint8Array | null> {
    const bytes = await this.#contents(request, LOCK_FILE_PATH);
    if (bytes !== null && bytes.byteLength > this.#config.maxLockFileBytes) {
      const { owner, repo } = ownerAndRepo(request.repository);
      throw new SvcError('SVC_ERR_GITHUB_LOCK_TOO_LARGE', `${LOCK_FILE_PATH} of ${owner}/${repo} at ${request.sha} is ${bytes.byteLength} bytes, over the ${this.#config.maxLockFileBytes}-byte limit`);
    }
    return bytes;
  }

  /** A file's bytes at `sha` (content requirements); null when there is no file at that path. */
  async readFile(request: { source: ProviderSource; repository: RepositoryRef; sha: string; path: string }): Promise<Uint8Array | null> {
    const path = checkRepositoryPath(request.path);
    const bytes = await this.#contents(request, path);
    if (bytes !== null && bytes.byteLength > MAX_READ_FILE_BYTES) {
      const { owner, repo } = ownerAndRepo(request.repository);
      throw new SvcError('SVC_ERR_GITHUB_FILE_TOO_LARGE', `${path} of ${owner}/${repo} at ${request.sha} is ${bytes.byteLength} bytes, over the ${MAX_READ_FILE_BYTES}-byte limit`);
    }
    return bytes;
  }

  /** Raw bytes of a regular file through the contents API; null for 404 or anything not a file. */
  async #contents(request: { source: ProviderSource; repository: RepositoryRef; sha: string }, path: string): Promise<Uint8Array | null> {
    const source = githubSourceOf(request.source);
    const { owner, repo } = ownerAndRepo(request.repository);
    const sha = checkSha(request.sha, 'sha');
    const octokit = await this.#client.installationOctokit(source, await this.installationIdOf(source, request.repository));
    let data: unknown;
    try {
      const response = await octokit.request('GET /repos/{owner}/{repo}/contents/{path}', {
        owner,
        repo,
        path,
        ref: sha,
        headers: { accept: 'application/vnd.github.raw' },
        request: this.#client.requestOptions(),
      });
      data = response.data;
    } catch (error) {
      const mapped = githubError(error, `${path} of ${owner}/${repo} at ${sha}`);
      // 404 is also GitHub's answer for an unknown sha; either way there is no file there.
      if (mapped instanceof NotFoundError) return null;
      throw mapped;
    }
    const bytes = bytesOfContent(data);
    if (bytes === null) {
      // A directory listing or a symlink/submodule object: not a lock file.
      this.#logger.warn({ repository: `${owner}/${repo}`, sha }, `${path} is not a regular file`);
      return null;
    }
    return bytes;
  }

  /**
   * Paths changed between `base` and `head` (renames give both paths). A zero `base` (a new
   * branch) gives the files of the head commit.
   */
  async changedFiles(request: { source: ProviderSource; repository: RepositoryRef; base: string; head: string }): Promise<string[]> {
    const source = githubSourceOf(request.source);
    const { owner, repo } = ownerAndRepo(request.repository);
    const base = checkSha(request.base, 'base');
    const head = checkSha(request.head, 'head');
    const octokit = await this.#client.installationOctokit(source, await this.installationIdOf(source, request.repository));
    const files = new Set<string>();
    let url: string | undefined =
      base === ZERO_SHA
        ? octokit.request.endpoint('GET /repos/{owner}/{repo}/commits/{ref}', { owner, repo, ref: head, per_page: 100 }).url
        : octokit.request.endpoint('GET /repos/{owner}/{repo}/compare/{basehead}', { owner, repo, basehead: `${base}...${head}`, per_page: 100 }).url;
    let pages = 0;
    while (url !== undefined) {
      if (++pages > MAX_PAGES) {
        throw new UnavailableError('SVC_ERR_GITHUB_DIFF_TOO_LARGE', `the diff of ${owner}/${repo} ${base}...${head} has more than ${MAX_PAGES} pages of files`);
      }
      let response;
      try {
        response = await octokit.request({ method: 'GET', url, request: this.#client.requestOptions() });
      } catch (error) {
        throw githubError(error, `changed files of ${owner}/${repo} ${base}...${head}`);
      }
      const list = (response.data as { files?: unknown }).files;
      if (Array.isArray(list)) {
        for (const entry of list) {
          const filename = (entry as { filename?: unknown }).filename;
          const previous = (entry as { previous_filename?: unknown }).previous_filename;
          if (typeof filename === 'string') files.add(filename);
          if (typeof previous === 'string') files.add(previous);
        }
      }
      url = nextLink(response.headers.link);
      // The token goes only to the configured API host, whatever a Link header says.
      if (url !== undefined && !url.startsWith(`${source.apiBaseUrl}/`)) {
        throw new UnavailableError('SVC_ERR_GITHUB_PAGINATION', `GitHub's next-page link leaves ${source.apiBaseUrl}; refusing to follow it`);
      }
    }
    return [...files].sort();
  }

  /** A clone URL and an installation token (HTTP basic `x-access-token:<token>`). */
  async checkoutCredentials(request: { source: ProviderSource; repository: RepositoryRef }): Promise<CheckoutCredentials> {
    const source = githubSourceOf(request.source);
    const { owner, repo } = ownerAndRepo(request.repository);
    const { token, expiresAt } = await this.#client.installationToken(source, await this.installationIdOf(source, request.repository));
    // Built from configuration, never from the payload: the token goes only to the configured host.
    return { cloneUrl: `${source.webBaseUrl}/${owner}/${repo}.git`, username: 'x-access-token', token, expiresAt };
  }
}

/** `rel="next"` of a Link header. */
function nextLink(header: unknown): string | undefined {
  if (typeof header !== 'string') return undefined;
  return /<([^<>]+)>;\s*rel="next"/.exec(header)?.[1];
}

/** Raw file bytes from whatever Octokit made of the body (text, ArrayBuffer, or a base64 JSON object). */
function bytesOfContent(data: unknown): Uint8Array | null {
  if (typeof data === 'string') return new Uint8Array(Buffer.from(data, 'utf8'));
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
    const file = data as { type?: unknown; content?: unknown; encoding?: unknown };
    if (file.type === 'file' && typeof file.content === 'string' && file.encoding === 'base64') {
      return new Uint8Array(Buffer.from(file.content, 'base64'));
    }
  }
  return null;
}
