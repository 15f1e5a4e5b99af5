// The agent's settings come from its own environment (interfaces.md): it does not read the
// orchestrator's config file. Every name is listed in AGENT_ENV_NAMES (and in the orchestrator
// config's NON_CONFIG_ENV_NAMES so an orchestrator sharing the environment does not refuse them).
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { join, resolve } from 'node:path';
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
  };
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
