// Repository reads through Gitea's REST API (`/api/v1`), authenticated with the source's access
// token (`Authorization: token <token>`): files at a commit from the contents API (the raw API
// when Gitea leaves a large file's content out), changed files from the compare API, and the
// clone URL plus token an agent checks out with.
import {
  messageOf,
  pluginError,
  type CheckoutCredentials,
  type PluginContext,
  type ProviderSource,
  type RepositoryRef,
  type SvcError,
} from 'svc/plugin';
import { checkRepositoryPath, checkSha, giteaSourceOf, ownerAndRepo, ZERO_SHA, type GiteaProviderConfig, type GiteaSource } from './settings.ts';

export const LOCK_FILE_PATH = '.svc/svc.lock.json';
/** Cap on a JSON answer that is not a file body (compare lists, commit details). */
const MAX_JSON_BYTES = 16 * 1024 * 1024;

type Logger = PluginContext['logger'];
type Target = { source: ProviderSource; repository: RepositoryRef };

export class GiteaRepositoryApi {
  readonly #config: GiteaProviderConfig;
  readonly #logger: Logger;

  constructor(options: { config: GiteaProviderConfig; logger: Logger }) {
    this.#config = options.config;
    this.#logger = options.logger;
  }

  async fetchLockFile(request: Target & { sha: string }): Promise<Uint8Array | null> {
    return this.#file(request, LOCK_FILE_PATH, this.#config.maxLockFileBytes);
  }

  async readFile(request: Target & { sha: string; path: string }): Promise<Uint8Array | null> {
    return this.#file(request, checkRepositoryPath(request.path), this.#config.maxReadFileBytes);
  }

  /** A regular file's bytes at `sha`; null when Gitea has no file there (404, a directory, a link). */
  async #file(request: Target & { sha: string }, path: string, maxBytes: number): Promise<Uint8Array | null> {
    const gitea = giteaSourceOf(request.source);
    const { owner, repo } = ownerAndRepo(request.repository);
    const sha = checkSha(request.sha, 'sha');
    const what = `${path} of ${owner}/${repo} at ${sha}`;
    const encoded = path.split('/').map(encodeURIComponent).join('/');
    const listing = await this.#get(gitea, `${repoPath(owner, repo)}/contents/${encoded}?ref=${sha}`, what, base64Limit(maxBytes));
    if (listing === null) return null;
    const entry = parseJson(listing, what);
    if (entry === null || entry['type'] !== 'file') {
      this.#logger.warn({ repository: `${owner}/${repo}`, sha, path }, 'not a regular file: treated as absent');
      return null;
    }
    if (typeof entry['size'] === 'number' && entry['size'] > maxBytes) throw tooLarge(what, entry['size'], maxBytes);
    if (typeof entry['content'] === 'string' && entry['encoding'] === 'base64') {
      const bytes = Buffer.from(entry['content'], 'base64');
      if (bytes.byteLength > maxBytes) throw tooLarge(what, bytes.byteLength, maxBytes);
      return new Uint8Array(bytes);
    }
    // Gitea omits `content` past its own blob size limit; the raw API serves the bytes.
    const raw = await this.#get(gitea, `${repoPath(owner, repo)}/raw/${encoded}?ref=${sha}`, what, maxBytes);
    return raw === null ? null : new Uint8Array(raw);
  }

  /** Paths changed between two commits; a zero `base` (a new branch) gives the head commit's files. */
  async changedFiles(request: Target & { base: string; head: string }): Promise<string[]> {
    const gitea = giteaSourceOf(request.source);
    const { owner, repo } = ownerAndRepo(request.repository);
    const head = checkSha(request.head, 'head');
    const newBranch = typeof request.base === 'string' && ZERO_SHA.test(request.base);
    const base = newBranch ? request.base : checkSha(request.base, 'base');
    const what = `changed files of ${owner}/${repo} ${base}...${head}`;
    const path = newBranch ? `${repoPath(owner, repo)}/git/commits/${head}` : `${repoPath(owner, repo)}/compare/${base}...${head}`;
    const body = await this.#get(gitea, path, what, MAX_JSON_BYTES);
    if (body === null) throw pluginError('not_found', 'SVC_ERR_GITEA_NOT_FOUND', `${what}: Gitea knows no such commits (404)`);
    const answer = parseJson(body, what);
    if (answer === null) throw pluginError('unavailable', 'SVC_ERR_GITEA_RESPONSE', `${what}: Gitea answered something other than a JSON object`);
    return filesOf(answer, what);
  }

  /** The clone URL, built from the source's settings (never the payload), and its token. */
  async checkoutCredentials(request: Target): Promise<CheckoutCredentials> {
    const gitea = giteaSourceOf(request.source);
    const { owner, repo } = ownerAndRepo(request.repository);
    return { cloneUrl: `${gitea.baseUrl}/${owner}/${repo}.git`, username: gitea.username, token: gitea.token };
  }

  /** GET under the API root; the body, or null for 404. Other failures are thrown, named. */
  async #get(gitea: GiteaSource, path: string, what: string, maxBytes: number): Promise<Buffer | null> {
    let response: Response;
    try {
      response = await fetch(`${gitea.apiUrl}${path}`, {
        headers: { authorization: `token ${gitea.token}`, accept: 'application/json', 'user-agent': 'svc-provider-gitea' },
        signal: AbortSignal.timeout(this.#config.requestTimeoutMs),
      });
    } catch (error) {
      throw pluginError('unavailable', 'SVC_ERR_GITEA_UNAVAILABLE', `${what}: Gitea at ${gitea.baseUrl} could not be reached: ${messageOf(error)}`, { cause: error });
    }
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    if (!response.ok) throw await statusError(response, what);
    return readCapped(response, maxBytes, what);
  }
}

function repoPath(owner: string, repo: string): string {
  return `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
}

/** A file of `maxBytes` is 4/3 that in base64, plus the JSON around it. */
function base64Limit(maxBytes: number): number {
  return Math.ceil(maxBytes / 3) * 4 + 64 * 1024;
}

function tooLarge(what: string, size: number, maxBytes: number): SvcError {
  return pluginError('internal', 'SVC_ERR_GITEA_FILE_TOO_LARGE', `${what} is ${size} bytes, over the ${maxBytes}-byte limit`);
}

function parseJson(body: Buffer, what: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw pluginError('unavailable', 'SVC_ERR_GITEA_RESPONSE', `${what}: Gitea's answer is not JSON: ${messageOf(error)}`, { cause: error });
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** Gitea's refusal as one of the kernel's error kinds, with its own message kept short. */
async function statusError(response: Response, what: string): Promise<SvcError> {
  const detail = (await response.text().catch(() => '')).split('\n')[0]!.slice(0, 300);
  const status = response.status;
  if (status === 401) return pluginError('authentication', 'SVC_ERR_GITEA_AUTH', `${what}: Gitea refused the source's token (401): ${detail}`);
  if (status === 403) return pluginError('authentication', 'SVC_ERR_GITEA_FORBIDDEN', `${what}: the token may not read this repository (403): ${detail}`);
  if (status < 500 && status !== 429) return pluginError('internal', 'SVC_ERR_GITEA_REQUEST', `${what}: Gitea answered ${status}: ${detail}`, { details: { status } });
  return pluginError('unavailable', 'SVC_ERR_GITEA_UNAVAILABLE', `${what}: Gitea answered ${status}: ${detail}`, { details: { status } });
}

/** The body, refusing (and cancelling) past `maxBytes` instead of buffering whatever comes. */
async function readCapped(response: Response, maxBytes: number, what: string): Promise<Buffer> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw tooLarge(what, declared, maxBytes);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw tooLarge(what, size, maxBytes);
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** File names from a compare answer (top-level `files`, else each commit's) or a commit's `files`. */
function filesOf(answer: Record<string, unknown>, what: string): string[] {
  const commits = Array.isArray(answer['commits']) ? answer['commits'] : [];
  const total = answer['total_commits'];
  if (typeof total === 'number' && total > commits.length && !Array.isArray(answer['files'])) {
    throw pluginError('unavailable', 'SVC_ERR_GITEA_DIFF_TOO_LARGE', `${what}: Gitea listed ${commits.length} of ${total} commits; the file list would be incomplete`);
  }
  const lists = Array.isArray(answer['files']) ? [answer['files']] : commits.length > 0 ? commits.map((c) => (c as { files?: unknown }).files) : [];
  const files = new Set<string>();
  for (const list of lists) {
    if (!Array.isArray(list)) throw pluginError('unavailable', 'SVC_ERR_GITEA_RESPONSE', `${what}: a commit in Gitea's answer lists no files`);
    for (const entry of list) {
      const name = (entry as { filename?: unknown } | null)?.filename;
      if (typeof name === 'string') files.add(name);
    }
  }
  return [...files].sort();
}
