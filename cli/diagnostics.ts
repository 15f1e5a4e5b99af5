// The environment report of `svc diagnostics` and `svc feedback --draft`: what a bug report
// needs (svc, Node and OS versions, the config file and which settings are set, whether the
// Platform answers and as whom, git, the repository's .svc/ state through the doctor checks),
// with every secret redacted. Redaction runs over the finished report: each known secret value
// (the stored token, SVC_TOKEN, SVC_PLATFORM_TOKEN, master keys, …) and anything shaped like a
// personal access token is replaced, wherever it ended up (an error message, a URL).
import { access } from 'node:fs/promises';
import { arch, platform, release } from 'node:os';
import { packageVersion } from '../core/package-info.ts';
import { messageOf } from '../core/errors.ts';
import { runDoctor, type DoctorReport } from './commands/doctor.ts';

export const REDACTED = '[redacted]';
/** Environment variables whose values are secrets wherever they appear. */
const SECRET_ENV = ['SVC_TOKEN', 'SVC_PLATFORM_TOKEN', 'SVC_SECRET_KEY', 'SVC_SECRET_KEY_OLD', 'SVC_ADMIN_TOKEN', 'SVC_AGENT_TOKEN'];
/** Environment variables reported as set or not (values of the secret ones never). */
const REPORTED_ENV = ['SVC_PLATFORM_URL', 'SVC_ORG', 'SVC_TOKEN', 'XDG_CONFIG_HOME', 'SVC_PLATFORM_TOKEN', 'SVC_SECRET_KEY'];
const PAT_SHAPE = /svcpat_[A-Za-z0-9_-]+/g;
/** Shortest value treated as a secret to replace (shorter ones would redact ordinary words). */
const MIN_SECRET_LENGTH = 6;

export interface DiagnosticsReport {
  svc: { version: string };
  node: { version: string };
  os: { platform: string; release: string; arch: string };
  config: { path: string; exists: boolean; error: string | null; platformUrl: string | null; org: string | null; token: 'set' | 'not set' };
  env: Record<string, string>;
  platform: { url: string | null; reachable: boolean; whoami: { orgId: string; kind: string; user?: string } | null; error: string | null };
  git: { version: string | null };
  project: DoctorReport;
}

/** Replaces each secret (and anything shaped like a personal access token) in `text`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) if (secret.length >= MIN_SECRET_LENGTH) out = out.split(secret).join(REDACTED);
  return out.replace(PAT_SHAPE, REDACTED);
}

/** A URL without credentials, query or fragment (a token could ride in any of them). */
function safeUrl(value: string): string {
  try {
    const url = new URL(value);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.toString().replace(/\/+$/, '');
  } catch {
    return '(not a URL)';
  }
}

async function platformCheck(env: NodeJS.ProcessEnv): Promise<DiagnosticsReport['platform']> {
  const { PlatformClient, platformSettings } = await import('./platform-client.ts');
  let url: string | null = null;
  try {
    const settings = await platformSettings(env);
    url = settings.platformUrl;
    const whoami = await new PlatformClient(settings).whoami();
    return { url, reachable: true, whoami, error: null };
  } catch (error) {
    // An HTTP answer (401, 403) means the Platform is there; only a network failure is "unreachable".
    const code = (error as { code?: string }).code;
    const reachable = url !== null && code !== 'SVC_ERR_CLI_PLATFORM_UNREACHABLE';
    return { url, reachable, whoami: null, error: messageOf(error) };
  }
}

export async function collectDiagnostics(cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<DiagnosticsReport> {
  const { configPath, readPlatformConfig } = await import('./platform-client.ts');
  const { tryGit } = await import('./preview/local-git.ts');
  const path = configPath(env);
  const exists = await access(path).then(() => true, () => false);
  let file: Awaited<ReturnType<typeof readPlatformConfig>> = {};
  let configError: string | null = null;
  try {
    file = await readPlatformConfig(env);
  } catch (error) {
    configError = messageOf(error);
  }
  const reportedEnv: Record<string, string> = {};
  for (const name of REPORTED_ENV) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    reportedEnv[name] = SECRET_ENV.includes(name) ? 'set' : name === 'SVC_PLATFORM_URL' ? safeUrl(value) : value;
  }
  const [platformResult, gitVersion, project] = await Promise.all([platformCheck(env), tryGit(cwd, ['--version']), runDoctor(cwd)]);
  const report: DiagnosticsReport = {
    svc: { version: packageVersion() },
    node: { version: process.versions.node },
    os: { platform: platform(), release: release(), arch: arch() },
    config: {
      path,
      exists,
      error: configError,
      platformUrl: file.platformUrl === undefined ? null : safeUrl(file.platformUrl),
      org: file.org ?? null,
      token: file.token === undefined ? 'not set' : 'set',
    },
    env: reportedEnv,
    platform: { ...platformResult, url: platformResult.url === null ? null : safeUrl(platformResult.url) },
    git: { version: gitVersion ?? null },
    project,
  };
  const secrets = [file.token, ...SECRET_ENV.map((name) => env[name])].filter((s): s is string => typeof s === 'string' && s !== '');
  return JSON.parse(redact(JSON.stringify(report), secrets.map((s) => JSON.stringify(s).slice(1, -1)))) as DiagnosticsReport;
}

/** The report as text lines (Markdown-friendly: `svc feedback --draft` embeds them). */
export function formatDiagnostics(r: DiagnosticsReport): string[] {
  const lines = [
    `svc         ${r.svc.version}`,
    `node        ${r.node.version}`,
    `os          ${r.os.platform} ${r.os.release} ${r.os.arch}`,
    `config      ${r.config.path} (${r.config.exists ? 'present' : 'absent'}${r.config.error !== null ? `, unreadable: ${r.config.error}` : ''})`,
    `  platformUrl ${r.config.platformUrl ?? '(not set)'}`,
    `  org         ${r.config.org ?? '(not set)'}`,
    `  token       ${r.config.token === 'set' ? `set ${REDACTED}` : 'not set'}`,
    `environment ${Object.keys(r.env).length === 0 ? '(no SVC_* settings)' : Object.entries(r.env).map(([k, v]) => `${k}=${v === 'set' ? REDACTED : v}`).join(' ')}`,
    `platform    ${r.platform.url ?? '(not configured)'}: ${r.platform.whoami !== null ? `reachable; org ${r.platform.whoami.orgId} as ${r.platform.whoami.user ?? r.platform.whoami.kind}` : `${r.platform.reachable ? 'reachable' : 'not reachable'}${r.platform.error !== null ? ` (${r.platform.error})` : ''}`}`,
    `git         ${r.git.version ?? 'not found on PATH'}`,
    `project     ${r.project.root} (doctor: ${r.project.status})`,
  ];
  for (const check of r.project.checks) lines.push(`  ${check.status.padEnd(4)} ${check.name}: ${check.message}`);
  return lines;
}
