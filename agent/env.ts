// The agent's settings come from its own environment (interfaces.md): it does not read the
// orchestrator's config file. Every name is listed in AGENT_ENV_NAMES (and in the orchestrator
// config's NON_CONFIG_ENV_NAMES so an orchestrator sharing the environment does not refuse them).
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { isAbsolute, join, normalize, resolve } from 'node:path';
import { InputError } from '../core/errors.ts';
import type { LogLevel } from '../schemas/config.ts';

export const AGENT_ENV_NAMES = [
  'SVC_ORCHESTRATOR_URL',
  'SVC_AGENT_TOKEN',
  'SVC_AGENT_LABELS',
  'SVC_AGENT_ID',
  'SVC_AGENT_EPHEMERAL',
  'SVC_AGENT_SANDBOX',
  'SVC_AGENT_WORK_DIR',
  'SVC_AGENT_MAX_RECONNECT_DELAY_MS',
  'SVC_AGENT_LOG_LEVEL',
  'SVC_AGENT_BWRAP',
  'SVC_AGENT_CONTAINER_RUNTIME',
  'SVC_AGENT_FIRECRACKER_BIN',
  'SVC_AGENT_FIRECRACKER_KERNEL',
  'SVC_AGENT_FIRECRACKER_ROOTFS',
  'SVC_AGENT_METRICS_PORT',
  'SVC_AGENT_METRICS_HOST',
  'SVC_AGENT_PASS_ENV',
] as const;

export const SANDBOX_NAMES = ['process', 'container', 'firecracker'] as const;
export type SandboxName = (typeof SANDBOX_NAMES)[number];
export const CONNECT_PATH = '/v1/agents/connect';
export const DEFAULT_MAX_RECONNECT_DELAY_MS = 60_000;

export interface AgentSettings {
  /** As given (printed on the ready line). */
  orchestratorUrl: string;
  /** WebSocket address of `GET /v1/agents/connect`. */
  connectUrl: string;
  token: string | undefined;
  labels: string[];
  /** Explicit SVC_AGENT_ID, else resolved by `resolveAgentId`. */
  agentId: string | undefined;
  ephemeral: boolean;
  sandbox: SandboxName;
  workDir: string;
  maxReconnectDelayMs: number;
  logLevel: LogLevel;
  bwrap: 'auto' | 'always' | 'never';
  containerRuntime: 'auto' | 'podman' | 'docker';
  firecracker: { binary: string; kernelImage: string | undefined; rootfs: string | undefined };
  /** `GET /metrics` listener (SVC_AGENT_METRICS_PORT, 0 = any free port); undefined = off. */
  metrics: { port: number; host: string } | undefined;
  /** Names a job gets from the agent's environment (SVC_AGENT_PASS_ENV; default DEFAULT_PASS_ENV). */
  passEnv: readonly string[];
  /** Those of `passEnv` set in the agent's environment at start, with their values. */
  passedEnv: Readonly<Record<string, string>>;
}

function fail(name: string, message: string): never {
  throw new InputError('SVC_ERR_AGENT_ENV', `${name} ${message}`, { details: { variable: name } });
}

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined || value === '') return fallback;
  if (!(allowed as readonly string[]).includes(value)) fail(name, `must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  return value as T;
}

export function connectUrlOf(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    fail('SVC_ORCHESTRATOR_URL', `is not a URL: ${JSON.stringify(raw)}`);
  }
  const scheme = { 'http:': 'ws:', 'https:': 'wss:', 'ws:': 'ws:', 'wss:': 'wss:' }[url.protocol];
  if (scheme === undefined) fail('SVC_ORCHESTRATOR_URL', `must be an http(s):// or ws(s):// address (got ${url.protocol})`);
  if (url.username !== '' || url.password !== '') fail('SVC_ORCHESTRATOR_URL', 'must not carry credentials; use SVC_AGENT_TOKEN');
  url.protocol = scheme;
  const base = url.pathname.replace(/\/+$/, '');
  url.pathname = base.endsWith(CONNECT_PATH) ? base : `${base}${CONNECT_PATH}`;
  url.hash = '';
  return url.toString();
}

const LABEL = /^[^\s*!,][^\s*,]{0,199}$/;
const LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as LogLevel[];

export function parseAgentEnv(env: Readonly<Record<string, string | undefined>>, cwd: string = process.cwd()): AgentSettings {
  const rawUrl = env['SVC_ORCHESTRATOR_URL']?.trim();
  if (rawUrl === undefined || rawUrl === '') fail('SVC_ORCHESTRATOR_URL', 'is required (the orchestrator address, e.g. http://orchestrator:7700)');
  const labels = (env['SVC_AGENT_LABELS'] ?? '')
    .split(',')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  for (const label of labels) {
    if (!LABEL.test(label)) fail('SVC_AGENT_LABELS', `has an invalid label ${JSON.stringify(label.slice(0, 80))}: no spaces, "*" or leading "!"`);
    if (label.toLowerCase().startsWith('svc:')) fail('SVC_AGENT_LABELS', `label ${JSON.stringify(label)} is in the reserved "svc:" namespace (the orchestrator adds those)`);
  }
  const id = env['SVC_AGENT_ID']?.trim();
  if (id !== undefined && id !== '' && !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(id)) fail('SVC_AGENT_ID', 'must be 1-200 characters of letters, digits, ".", "_", ":" or "-"');
  const ephemeralRaw = (env['SVC_AGENT_EPHEMERAL'] ?? '').trim().toLowerCase();
  if (!['', 'true', 'false', '1', '0'].includes(ephemeralRaw)) fail('SVC_AGENT_EPHEMERAL', 'must be true or false');
  const maxRaw = env['SVC_AGENT_MAX_RECONNECT_DELAY_MS'];
  let maxReconnectDelayMs = DEFAULT_MAX_RECONNECT_DELAY_MS;
  if (maxRaw !== undefined && maxRaw.trim() !== '') {
    maxReconnectDelayMs = Number(maxRaw);
    if (!Number.isInteger(maxReconnectDelayMs) || maxReconnectDelayMs < 100 || maxReconnectDelayMs > 3_600_000) {
      fail('SVC_AGENT_MAX_RECONNECT_DELAY_MS', `must be an integer from 100 to 3600000 milliseconds (got ${JSON.stringify(maxRaw)})`);
    }
  }
  const token = env['SVC_AGENT_TOKEN'];
  const metricsRaw = env['SVC_AGENT_METRICS_PORT']?.trim();
  let metrics: AgentSettings['metrics'];
  if (metricsRaw !== undefined && metricsRaw !== '') {
    const port = Number(metricsRaw);
    if (!/^\d+$/.test(metricsRaw) || port > 65_535) fail('SVC_AGENT_METRICS_PORT', `must be a port number from 0 to 65535 (got ${JSON.stringify(metricsRaw.slice(0, 40))})`);
    // Loopback unless the operator names another address: process metrics are not for everyone.
    const host = env['SVC_AGENT_METRICS_HOST']?.trim() || '127.0.0.1';
    if (/\s|\//.test(host)) fail('SVC_AGENT_METRICS_HOST', `must be a host name or address (got ${JSON.stringify(host.slice(0, 80))})`);
    metrics = { port, host };
  } else if ((env['SVC_AGENT_METRICS_HOST']?.trim() ?? '') !== '') {
    fail('SVC_AGENT_METRICS_HOST', 'is set but SVC_AGENT_METRICS_PORT is not (the metrics listener is off without a port)');
  }
  return {
    orchestratorUrl: rawUrl,
    connectUrl: connectUrlOf(rawUrl),
    token: token === undefined || token === '' ? undefined : token,
    labels: [...new Set(labels)],
    agentId: id === undefined || id === '' ? undefined : id,
    ephemeral: ephemeralRaw === 'true' || ephemeralRaw === '1',
    sandbox: oneOf('SVC_AGENT_SANDBOX', env['SVC_AGENT_SANDBOX'], SANDBOX_NAMES, 'process'),
    workDir: resolve(cwd, env['SVC_AGENT_WORK_DIR'] || '.svc-agent'),
    maxReconnectDelayMs,
    logLevel: oneOf('SVC_AGENT_LOG_LEVEL', env['SVC_AGENT_LOG_LEVEL'], LEVELS, 'info'),
    bwrap: oneOf('SVC_AGENT_BWRAP', env['SVC_AGENT_BWRAP'], ['auto', 'always', 'never'] as const, 'auto'),
    containerRuntime: oneOf('SVC_AGENT_CONTAINER_RUNTIME', env['SVC_AGENT_CONTAINER_RUNTIME'], ['auto', 'podman', 'docker'] as const, 'auto'),
    firecracker: {
      binary: env['SVC_AGENT_FIRECRACKER_BIN'] || 'firecracker',
      kernelImage: env['SVC_AGENT_FIRECRACKER_KERNEL'] || undefined,
      rootfs: env['SVC_AGENT_FIRECRACKER_ROOTFS'] || undefined,
    },
    metrics,
    ...passEnvOf(env),
  };
}

/**
 * What a job gets from the agent's environment by default (SVC_AGENT_PASS_ENV unset): the proxy
 * and CA-bundle settings that Node, npm/pnpm/yarn, pip, cargo, Go, git and curl read, so a job on
 * a network behind a forward or TLS-inspecting proxy reaches what the agent's own shell reaches.
 * docs/agent.md "What a job's environment holds" lists the same names.
 */
export const DEFAULT_PASS_ENV: readonly string[] = [
  // Proxies: curl, git, pip, Go, npm (and Node 24's fetch/https with NODE_USE_ENV_PROXY=1).
  'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy', 'ALL_PROXY', 'all_proxy',
  'NODE_USE_ENV_PROXY',
  'npm_config_proxy', 'npm_config_https_proxy', 'npm_config_noproxy', 'NPM_CONFIG_PROXY', 'NPM_CONFIG_HTTPS_PROXY', 'NPM_CONFIG_NOPROXY',
  'YARN_HTTP_PROXY', 'YARN_HTTPS_PROXY', 'CARGO_HTTP_PROXY',
  // CA bundles: Node, OpenSSL (curl, git, Python, Go), npm/pnpm, yarn, git, curl, requests, pip, cargo, the AWS CLI/SDKs.
  'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR',
  'npm_config_cafile', 'NPM_CONFIG_CAFILE', 'YARN_HTTPS_CA_FILE_PATH',
  'GIT_SSL_CAINFO', 'GIT_SSL_CAPATH', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'CARGO_HTTP_CAINFO', 'AWS_CA_BUNDLE',
];

/**
 * Of the defaults, those whose value names a file or directory a program reads: a sandbox must
 * let the job read it (bubblewrap's fresh /tmp would hide a bundle kept under /tmp, a container
 * would not have it at all), so the job's spawn request lists it among its read paths.
 */
const CA_PATH_NAMES: ReadonlySet<string> = new Set([
  'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'npm_config_cafile', 'NPM_CONFIG_CAFILE', 'YARN_HTTPS_CA_FILE_PATH',
  'GIT_SSL_CAINFO', 'GIT_SSL_CAPATH', 'CURL_CA_BUNDLE', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'CARGO_HTTP_CAINFO', 'AWS_CA_BUNDLE',
]);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/**
 * Names a policy may not pass, and why: what the agent sets for every job itself, the agent's
 * own settings (its token among them), and what changes how the step runner process loads.
 */
const REFUSED_EXACT: Readonly<Record<string, string>> = {
  PATH: 'the agent sets it for every job (Node first)',
  HOME: "the agent sets it to the job's scratch directory",
  TMPDIR: "the agent sets it to the job's scratch directory",
  LANG: 'the agent sets it to C.UTF-8',
  NODE_COMPILE_CACHE: "the agent sets it for the step runner",
  NODE_OPTIONS: 'it changes how the step runner itself starts',
  NODE_PATH: 'it changes which modules the step runner loads',
  BASH_ENV: 'every bash the job starts would run the file it names',
};
const REFUSED_PREFIXES: ReadonlyArray<readonly [string, string]> = [
  ['SVC_', "the agent's own settings (its token among them) are not the job's"],
  ['NODE_CHANNEL_', "the step runner's IPC channel is the agent's"],
  ['LD_', 'it changes how every program the job starts is loaded'],
  ['DYLD_', 'it changes how every program the job starts is loaded'],
];

/** Why `name` may not be passed to jobs, or undefined when it may. */
export function passEnvRefusal(name: string): string | undefined {
  if (!ENV_NAME.test(name)) return 'is not an environment variable name (letters, digits and "_", not starting with a digit)';
  const exact = REFUSED_EXACT[name];
  if (exact !== undefined) return `cannot be passed: ${exact}`;
  const prefix = REFUSED_PREFIXES.find(([p]) => name.toUpperCase().startsWith(p));
  return prefix === undefined ? undefined : `cannot be passed: ${prefix[1]}`;
}

/**
 * The names of a SVC_AGENT_PASS_ENV value: a comma- or space-separated list where `default`
 * stands for DEFAULT_PASS_ENV, `-NAME` takes a name out, and `none` (alone) passes nothing.
 * Unset or blank: the defaults. A name that may not be passed stops the program with its reason.
 */
export function parsePassEnv(raw: string | undefined, variable = 'SVC_AGENT_PASS_ENV'): string[] {
  const items = (raw ?? '').split(/[\s,]+/).filter((i) => i !== '');
  if (items.length === 0) return [...DEFAULT_PASS_ENV];
  if (items.length === 1 && items[0]!.toLowerCase() === 'none') return [];
  const names = new Set<string>();
  const removed = new Set<string>();
  for (const item of items) {
    if (item.toLowerCase() === 'none') fail(variable, 'can say "none" only alone (it passes nothing to jobs)');
    if (item.toLowerCase() === 'default') {
      for (const name of DEFAULT_PASS_ENV) names.add(name);
      continue;
    }
    const minus = item.startsWith('-');
    const name = minus ? item.slice(1) : item;
    const why = passEnvRefusal(name);
    if (why !== undefined) fail(variable, `names ${JSON.stringify(name.slice(0, 80))}, which ${why}`);
    if (minus) removed.add(name);
    else names.add(name);
  }
  return [...names].filter((n) => !removed.has(n));
}

/** The values of `names` that are set in `env` (a name that is unset is left out, not emptied). */
export function passedEnvOf(names: readonly string[], env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/**
 * The part of a shell's environment an agent started in-process for that shell (`svc dev`) is
 * given: its SVC_AGENT_PASS_ENV and the variables that policy passes, nothing else.
 */
export function passEnvFromShell(shell: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const policy = shell['SVC_AGENT_PASS_ENV'];
  return { ...passedEnvOf(parsePassEnv(policy), shell), ...(policy === undefined ? {} : { SVC_AGENT_PASS_ENV: policy }) };
}

function passEnvOf(env: Readonly<Record<string, string | undefined>>): Pick<AgentSettings, 'passEnv' | 'passedEnv'> {
  const passEnv = parsePassEnv(env['SVC_AGENT_PASS_ENV']);
  return { passEnv, passedEnv: passedEnvOf(passEnv, env) };
}

/**
 * Files and directories named by passed CA-bundle variables, for the sandbox's read paths. Only
 * absolute paths below the root: "/" itself would re-expose the host's /tmp over the job's own.
 */
export function passedReadPaths(passed: Readonly<Record<string, string>>): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(passed)) {
    if (!CA_PATH_NAMES.has(name) || !isAbsolute(value) || normalize(value) === '/' || value.includes('\n')) continue;
    out.push(normalize(value));
  }
  return [...new Set(out)];
}

/**
 * SVC_AGENT_ID, else the id stored in the work dir, else a new `<hostname>-<8 hex>` stored
 * there: a restarted agent keeps its id, so its in-flight jobs can be re-attached, while two
 * agents on one host (two work dirs) never collide.
 */
export async function resolveAgentId(settings: Pick<AgentSettings, 'agentId' | 'workDir'>, hostname: string = osHostname()): Promise<string> {
  if (settings.agentId !== undefined) return settings.agentId;
  const file = join(settings.workDir, 'agent-id');
  try {
    const stored = (await readFile(file, 'utf8')).trim();
    if (/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(stored)) return stored;
  } catch {
    // first start
  }
  const host = hostname.toLowerCase().replace(/[^a-z0-9.-]+/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 150) || 'agent';
  const id = `${host}-${randomBytes(4).toString('hex')}`;
  await mkdir(settings.workDir, { recursive: true });
  await writeFile(file, `${id}\n`, { mode: 0o600 });
  return id;
}
