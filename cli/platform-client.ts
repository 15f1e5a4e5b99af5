// The developer CLI's way to the Platform (spec "Authentication" 3: remote runs and log polling go
// through the Platform; the CLI never calls an orchestrator directly). Settings come from the
// user's config file `${XDG_CONFIG_HOME:-~/.config}/svc/config.json` (written by `svc login`,
// mode 0600) — `{ platformUrl, org, token }` — with environment overrides SVC_PLATFORM_URL,
// SVC_TOKEN and SVC_ORG.
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Type, type Static } from 'typebox';
import { ApprovalResult, RunArtifact, RunArtifactChunk, RunLogsPage, RunView } from '../schemas/wire/relay.ts';
import type { ApprovalDecisionBody } from '../schemas/http/approvals.ts';
import { RunList, RunReport, type RunStatus } from '../schemas/http/run-index.ts';
import { PatCreated, PatList, PatRevoked, type PatCreateBody } from '../schemas/http/pats.ts';
import { EndpointList, Notifications, OrchestratorList, SecretList, SecretSetResult } from '../schemas/http/org.ts';
import { RemoteRunResult, RemoteUpload, type RemoteRunBody } from '../schemas/http/remote-run.ts';
import { compileSchema, formatIssues } from '../schemas/validate.ts';
import { TestsAnswer } from '../schemas/wire/relay-tests.ts';
import { LogSearchAnswer } from '../schemas/wire/relay-log-search.ts';
import type { QuarantineChangeBody } from '../schemas/http/tests.ts';
import {
  AuthenticationError,
  ConflictError,
  InputError,
  NotAllowedError,
  NotFoundError,
  RateLimitedError,
  SvcError,
  UnavailableError,
  messageOf,
  type ErrorCode,
} from '../core/errors.ts';
import { receivedCode } from '../core/error-codes.ts';
import { renewIfDue } from './token-refresh.ts';

export const PlatformConfigFile = Type.Object(
  {
    platformUrl: Type.Optional(Type.String()),
    org: Type.Optional(Type.String()),
    token: Type.Optional(Type.String()),
    /** With a token of `svc login` through an identity provider: renews it (docs/login.md). */
    refreshToken: Type.Optional(Type.String()),
    /** When `token` stops working (ISO time); renewed shortly before with `refreshToken`. */
    expiresAt: Type.Optional(Type.String()),
  },
  // Other keys are kept as they are (a newer CLI may have written them).
  { additionalProperties: true },
);
export type PlatformConfigFile = Static<typeof PlatformConfigFile>;

const checkConfig = compileSchema(PlatformConfigFile);
const checkShow = compileSchema(Type.Object({ run: RunView }));
const checkPage = compileSchema(RunLogsPage);
const checkRunList = compileSchema(RunList);
const checkArtifacts = compileSchema(Type.Object({ artifacts: Type.Array(RunArtifact) }));
const checkChunk = compileSchema(RunArtifactChunk);
const checkApproval = compileSchema(ApprovalResult);
const checkPatCreated = compileSchema(PatCreated);
const checkPatList = compileSchema(PatList);
const checkPatRevoked = compileSchema(PatRevoked);
const checkOrchestrators = compileSchema(OrchestratorList);
const checkEndpoints = compileSchema(EndpointList);
const checkReport = compileSchema(RunReport);
const checkSecrets = compileSchema(SecretList);
const checkSecretSet = compileSchema(SecretSetResult);
const checkNotifications = compileSchema(Notifications);
const checkRemoteUpload = compileSchema(RemoteUpload);
const checkRemoteResult = compileSchema(RemoteRunResult);
const checkTests = compileSchema(TestsAnswer);
const checkLogSearch = compileSchema(LogSearchAnswer);
const checkWhoami = compileSchema(Type.Object({ orgId: Type.String(), kind: Type.String(), user: Type.Optional(Type.String()) }));

export const ORG_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** One HTTP request to the Platform, at most this long. */
export const REQUEST_TIMEOUT_MS = 30_000;

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env['XDG_CONFIG_HOME'];
  const base = xdg !== undefined && xdg !== '' ? xdg : join(env['HOME'] || homedir(), '.config');
  return join(base, 'svc', 'config.json');
}

export async function readPlatformConfig(env: NodeJS.ProcessEnv = process.env): Promise<PlatformConfigFile> {
  const path = configPath(env);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new InputError('SVC_ERR_CLI_CONFIG_UNREADABLE', `cannot read ${path}: ${messageOf(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new InputError('SVC_ERR_CLI_CONFIG_INVALID', `${path} is not valid JSON (${messageOf(error)}); fix it or remove it and run "svc login" again`);
  }
  const checked = checkConfig.validate(parsed);
  if (!checked.ok || typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InputError('SVC_ERR_CLI_CONFIG_INVALID', `${path} does not have the expected shape (${checked.ok ? 'not an object' : formatIssues(checked.issues)}); fix it or remove it and run "svc login" again`);
  }
  return checked.value;
}

/** Writes the whole file atomically, readable by the user only (it holds a token). */
export async function writePlatformConfig(config: PlatformConfigFile, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const path = configPath(env);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  // The mode of writeFile applies only to a new file; make sure of it.
  await chmod(temp, 0o600);
  await rename(temp, path);
  return path;
}

export function checkPlatformUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InputError('SVC_ERR_CLI_USAGE', `"${value}" is not a URL; pass the Platform address, e.g. https://platform.example.com`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InputError('SVC_ERR_CLI_USAGE', `the Platform URL must be http(s), not ${url.protocol}`);
  if (url.username !== '' || url.password !== '') throw new InputError('SVC_ERR_CLI_USAGE', 'the Platform URL must not carry credentials; pass the token with --token');
  return url.toString().replace(/\/+$/, '');
}

export function checkOrg(value: string): string {
  if (!ORG_PATTERN.test(value)) throw new InputError('SVC_ERR_CLI_USAGE', `"${value}" is not an org id: 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit`);
  return value;
}

export interface PlatformSettings {
  platformUrl: string;
  org: string;
  token: string;
}

/** Config file plus environment overrides; a clear error naming what is missing. */
export async function platformSettings(env: NodeJS.ProcessEnv = process.env): Promise<PlatformSettings> {
  const file = await readPlatformConfig(env);
  const pick = (name: string, fromFile: string | undefined) => {
    const v = env[name];
    return v !== undefined && v !== '' ? v : fromFile;
  };
  const platformUrl = pick('SVC_PLATFORM_URL', file.platformUrl);
  const token = pick('SVC_TOKEN', file.token);
  const org = pick('SVC_ORG', file.org);
  if (token === undefined || platformUrl === undefined) {
    throw new AuthenticationError('SVC_ERR_CLI_NOT_LOGGED_IN', 'not logged in: run "svc login --platform-url <url>" (or "svc login --token <PAT>", or set SVC_PLATFORM_URL and SVC_TOKEN)');
  }
  if (org === undefined) throw new InputError('SVC_ERR_CLI_NO_ORG', 'no org chosen: run "svc org use <org>" (or set SVC_ORG)');
  // A stored token of a provider sign-in about to end is renewed first (SVC_TOKEN is used as given).
  const fromFile = token === file.token && (env['SVC_TOKEN'] === undefined || env['SVC_TOKEN'] === '');
  const store = { read: () => readPlatformConfig(env), write: (login: PlatformConfigFile) => writePlatformConfig(login, env), timeoutMs: REQUEST_TIMEOUT_MS };
  const current = fromFile ? await renewIfDue(checkPlatformUrl(platformUrl), file, store) : token;
  return { platformUrl: checkPlatformUrl(platformUrl), org: checkOrg(org), token: current };
}

function errorFor(status: number, code: ErrorCode, message: string, retryAfter: string | null): SvcError {
  if (status === 401) return new AuthenticationError(code, `${message} (run "svc login" again, or "svc login --token <PAT>" with a valid token)`);
  if (status === 403) return new NotAllowedError(code, message);
  if (status === 404) return new NotFoundError(code, message);
  if (status === 429) return new RateLimitedError(code, message, retryAfterSeconds(retryAfter));
  if (status === 409) return new ConflictError(code, message);
  if (status >= 500) return new UnavailableError(code, message);
  return new SvcError(code, message);
}

/** Seconds of a Retry-After header (delta-seconds; an HTTP date or nothing counts as 1). */
function retryAfterSeconds(value: string | null): number {
  const seconds = value === null ? Number.NaN : Number(value.trim());
  return Number.isFinite(seconds) && seconds >= 1 ? Math.ceil(seconds) : 1;
}

export class PlatformClient {
  readonly platformUrl: string;
  readonly org: string;
  readonly #token: string;

  constructor(settings: PlatformSettings) {
    this.platformUrl = settings.platformUrl;
    this.org = settings.org;
    this.#token = settings.token;
  }

  static async fromConfig(env: NodeJS.ProcessEnv = process.env): Promise<PlatformClient> {
    return new PlatformClient(await platformSettings(env));
  }

  async #get(path: string): Promise<unknown> {
    return this.#request('GET', path);
  }

  /** One request with a JSON body (`POST`); the answer as `#get` reads it. */
  async #post(path: string, body: unknown): Promise<unknown> {
    return this.#request('POST', path, body);
  }

  async #request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<unknown> {
    const url = `${this.platformUrl}${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause;
      throw new UnavailableError('SVC_ERR_CLI_PLATFORM_UNREACHABLE', `cannot reach the Platform at ${this.platformUrl}: ${messageOf(cause ?? error)}`);
    }
    const text = await response.text();
    let answer: unknown;
    try {
      answer = text === '' ? undefined : JSON.parse(text);
    } catch {
      answer = undefined;
    }
    if (!response.ok) {
      const e = (answer as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
      const code: ErrorCode = typeof e?.code === 'string' ? receivedCode(e.code) : `SVC_ERR_CLI_PLATFORM_HTTP_${response.status}`;
      const message = typeof e?.message === 'string' ? e.message : `the Platform answered ${response.status} ${response.statusText} for ${path}`;
      throw errorFor(response.status, code, message, response.headers.get('retry-after'));
    }
    return answer;
  }

  #checked<T>(check: { validate(v: unknown): { ok: true; value: T } | { ok: false; issues: Parameters<typeof formatIssues>[0] } }, body: unknown, what: string): T {
    const result = check.validate(body);
    if (!result.ok) throw new UnavailableError('SVC_ERR_CLI_PLATFORM_BAD_ANSWER', `the Platform's ${what} does not have the expected shape (${formatIssues(result.issues)}); is the CLI older than the Platform?`);
    return result.value;
  }

  #runPath(runId: string): string {
    return `/v1/orgs/${encodeURIComponent(this.org)}/runs/${encodeURIComponent(runId)}`;
  }

  async whoami(): Promise<Static<typeof checkWhoami.schema>> {
    return this.#checked(checkWhoami, await this.#get('/v1/whoami'), 'identity answer');
  }

  /** The caller's own personal access tokens (`svc pat list`); never their values. */
  async listPats(): Promise<PatList> {
    return this.#checked(checkPatList, await this.#get('/v1/pats'), 'token list');
  }

  /** A new token of the caller's user and org; its value is in this answer only (`svc pat create`). */
  async createPat(body: PatCreateBody): Promise<PatCreated> {
    return this.#checked(checkPatCreated, await this.#post('/v1/pats', body), 'new token');
  }

  /** Revokes one of the caller's own tokens (`svc pat revoke`). */
  async revokePat(id: string): Promise<PatRevoked> {
    return this.#checked(checkPatRevoked, await this.#request('DELETE', `/v1/pats/${encodeURIComponent(id)}`), 'revocation answer');
  }

  /** A re-run of the run (`svc runs rerun`); `failed`: restart from its failed jobs only. */
  async rerunRun(runId: string, options: { failed?: boolean } = {}): Promise<{ newRunId: string }> {
    const path = `/orgs/${encodeURIComponent(this.org)}/runs/${encodeURIComponent(runId)}/rerun${options.failed === true ? '?mode=failed' : ''}`;
    const answer = (await this.#request('POST', path)) as { newRunId?: unknown } | undefined;
    if (typeof answer?.newRunId !== 'string') throw new UnavailableError('SVC_ERR_CLI_PLATFORM_BAD_ANSWER', "the Platform's re-run answer has no newRunId; is the CLI older than the Platform?");
    return { newRunId: answer.newRunId };
  }

  async showRun(runId: string): Promise<RunView> {
    return this.#checked(checkShow, await this.#get(this.#runPath(runId)), 'run detail').run;
  }

  /** Recent runs of the org from the relay's run index (no orchestrator needed). */
  async listRuns(filter: { limit?: number; status?: RunStatus; repository?: string; workflow?: string; branch?: string; before?: string } = {}): Promise<RunList> {
    const query = new URLSearchParams();
    if (filter.limit !== undefined) query.set('limit', String(filter.limit));
    if (filter.status !== undefined) query.set('status', filter.status);
    if (filter.repository !== undefined) query.set('repository', filter.repository);
    if (filter.workflow !== undefined) query.set('workflow', filter.workflow);
    if (filter.branch !== undefined) query.set('branch', filter.branch);
    if (filter.before !== undefined) query.set('before', filter.before);
    const qs = query.toString();
    return this.#checked(checkRunList, await this.#get(`/v1/orgs/${encodeURIComponent(this.org)}/runs${qs === '' ? '' : `?${qs}`}`), 'run list');
  }

  #orgPath(rest: string): string {
    return `/v1/orgs/${encodeURIComponent(this.org)}/${rest}`;
  }

  /** Orchestrators of the org connected to the relay (`svc orchestrators`). */
  async orchestrators(): Promise<OrchestratorList> {
    return this.#checked(checkOrchestrators, await this.#get(this.#orgPath('orchestrators')), 'orchestrator list');
  }

  /** Webhook ingest endpoints the relay serves for the org (`svc endpoints`). */
  async endpoints(): Promise<EndpointList> {
    return this.#checked(checkEndpoints, await this.#get(this.#orgPath('endpoints')), 'endpoint list');
  }

  /** The org's runs of the last `days` summed up (`svc report`). */
  async report(days: number): Promise<RunReport> {
    return this.#checked(checkReport, await this.#get(this.#orgPath(`report?days=${days}`)), 'run report');
  }

  /** Secret contexts of the org and their key names, never values (`svc secrets list`). */
  async secrets(): Promise<SecretList> {
    return this.#checked(checkSecrets, await this.#get(this.#orgPath('secrets')), 'secret list');
  }

  /** Sets one secret of a test context (`svc secrets set`); the value goes in the body only. */
  async setSecret(context: string, key: string, value: string): Promise<SecretSetResult> {
    return this.#checked(checkSecretSet, await this.#post(this.#orgPath(`secrets/${encodeURIComponent(context)}/${encodeURIComponent(key)}`), { value }), 'secret answer');
  }

  /** Recent run-status deliveries and pending approvals (`svc notifications`). */
  async notifications(limit: number): Promise<Notifications> {
    return this.#checked(checkNotifications, await this.#get(this.#orgPath(`notifications?limit=${limit}`)), 'notifications');
  }

  /** Approves or rejects the run's pending holds as the token's user (`svc approve|reject`). */
  async decideRun(runId: string, decision: 'approve' | 'reject', body: ApprovalDecisionBody = {}): Promise<ApprovalResult> {
    return this.#checked(checkApproval, await this.#post(`${this.#runPath(runId)}/${decision}`, body), 'approval answer');
  }

  async runLogs(runId: string, after?: string): Promise<RunLogsPage> {
    const query = after === undefined || after === '' ? '' : `?after=${encodeURIComponent(after)}`;
    return this.#checked(checkPage, await this.#get(`${this.#runPath(runId)}/logs${query}`), 'log page');
  }

  /** An upload slot for a sealed overlay (`svc run remote`). */
  async remoteUpload(): Promise<RemoteUpload> {
    return this.#checked(checkRemoteUpload, await this.#post(`/v1/orgs/${encodeURIComponent(this.org)}/remote-runs/uploads`, {}), 'upload slot');
  }

  /** The runs of one fixture from an uploaded overlay (`svc run remote`). */
  async createRemoteRuns(body: RemoteRunBody): Promise<RemoteRunResult> {
    return this.#checked(checkRemoteResult, await this.#post(`/v1/orgs/${encodeURIComponent(this.org)}/remote-runs`, body), 'remote-run answer');
  }

  /** Lines of the org's run logs containing a text (`svc logs search`, docs/log-search.md); `query` is the route's query string. */
  async searchLogs(query: string): Promise<LogSearchAnswer> {
    return this.#checked(checkLogSearch, await this.#get(this.#orgPath(`logs/search?${query}`)), 'log search answer');
  }

  /** A test-results view (`svc tests …`, docs/test-results.md); `query` is the route's query string. */
  async tests(query: string): Promise<TestsAnswer> {
    return this.#checked(checkTests, await this.#get(this.#orgPath(`tests?${query}`)), 'tests answer');
  }

  /** One run's tests (`svc tests --run`). */
  async runTests(runId: string): Promise<TestsAnswer> {
    return this.#checked(checkTests, await this.#get(`${this.#runPath(runId)}/tests`), 'tests answer');
  }

  /** Puts a test into quarantine or takes it out (`svc tests quarantine add|remove`). */
  async changeQuarantine(body: QuarantineChangeBody): Promise<TestsAnswer> {
    return this.#checked(checkTests, await this.#post(this.#orgPath('tests/quarantine'), body), 'quarantine answer');
  }

  /** The run's artifacts (`svc runs artifacts`). */
  async runArtifacts(runId: string): Promise<RunArtifact[]> {
    return this.#checked(checkArtifacts, await this.#get(`${this.#runPath(runId)}/artifacts`), 'artifact list').artifacts;
  }

  /** One chunk of an artifact's bytes from `offset` (`svc runs download`). */
  async artifactChunk(runId: string, name: string, offset: number): Promise<RunArtifactChunk> {
    return this.#checked(checkChunk, await this.#get(`${this.#runPath(runId)}/artifacts/${encodeURIComponent(name)}?offset=${offset}`), 'artifact chunk');
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A run id argument: a UUID, else a usage error (exit 2). */
export function checkRunIdArg(runId: string): string {
  if (!UUID.test(runId)) throw new InputError('SVC_ERR_CLI_USAGE', `"${runId}" is not a run id (a UUID such as 0b7c…-…); copy it from the dashboard or "svc run remote"`);
  return runId.toLowerCase();
}
