// The workflow's `registries` and `installEnv` on the dependency install (`npm ci` of `.svc/`),
// and nowhere else (docs/agent.md "Private registries and installEnv"):
// - a per-install npm user config (`npm_config_userconfig`) in a fresh 0700 temp directory, file
//   0600, naming each registry, its scope and `always-auth`; the token itself is not written: the
//   file says `_authToken=${SVC_REGISTRY_TOKEN_<n>}` and npm reads the value from the install's
//   environment, so no copy of it is ever on disk, even if the agent is killed mid-install;
// - each `installEnv` secret as a variable named by its key part (`npm:NPM_TOKEN` → NPM_TOKEN);
// - the directory is removed when the install ends, however it ends (failure, cancel).
// The step runner is spawned with its own minimal environment: none of this reaches a step.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JobInstall } from '../../schemas/wire/agent.ts';
import { JobFailure } from './failure.ts';

export type { JobInstall } from '../../schemas/wire/agent.ts';

const TOKEN_VARIABLE = 'SVC_REGISTRY_TOKEN_';
/** Variables the install's own environment sets: a projected secret never replaces one. */
const RESERVED = /^(PATH|HOME|LANG|TMPDIR|NODE_.*|npm_config_.*|SVC_.*)$/i;

/** Every secret value the install receives: the job's masker hides them in every line. */
export function installSecretValues(install: JobInstall | undefined): string[] {
  if (install === undefined) return [];
  return [...install.registries.map((r) => r.token), ...install.env.map((e) => e.value)].filter((v): v is string => v !== undefined && v !== '');
}

/** `//host[:port]/path/`: the key npm matches a request URL's credentials by. */
export function nerfDart(url: string): string {
  const u = new URL(url);
  const path = u.pathname.endsWith('/') ? u.pathname : `${u.pathname}/`;
  return `//${u.host}${path}`;
}

/** The user config's text: registries and where their tokens come from, no token. */
export function userConfigText(install: JobInstall): string {
  const lines: string[] = [];
  install.registries.forEach((r, index) => {
    lines.push(`${r.scope === undefined ? 'registry' : `${r.scope}:registry`}=${r.url}`);
    lines.push(`${nerfDart(r.url)}:_authToken=\${${TOKEN_VARIABLE}${index}}`);
    if (r.alwaysAuth) lines.push(`${nerfDart(r.url)}:always-auth=true`);
  });
  return `${lines.join('\n')}\n`;
}

function missing(what: string, secret: string): JobFailure {
  const colon = secret.indexOf(':');
  return new JobFailure(
    'SVC_ERR_AGENT_INSTALL_SECRET',
    `${what} needs secret ${secret}, which was not released to this job (secret context ${JSON.stringify(secret.slice(0, colon))} has no key ${secret.slice(colon + 1)}, or the context was skipped for this run); the dependency install was not started`,
  );
}

/** The secrets as the install's variables; refuses a missing value or a reserved name. */
function installVariables(install: JobInstall): Record<string, string> {
  const vars: Record<string, string> = {};
  install.registries.forEach((r, index) => {
    if (r.token === undefined) throw missing(`registries[${index}] (${r.scope === undefined ? '' : `${r.scope} → `}${r.url})`, r.tokenSecret);
    vars[`${TOKEN_VARIABLE}${index}`] = r.token;
  });
  for (const e of install.env) {
    if (e.value === undefined) throw missing(`installEnv ${e.name}`, e.secret);
    if (RESERVED.test(e.name)) {
      throw new JobFailure('SVC_ERR_AGENT_INSTALL_SECRET', `installEnv ${e.secret} projects ${e.name}, a variable the install sets itself (PATH, HOME, LANG, TMPDIR, NODE_*, npm_config_*, SVC_*); the dependency install was not started`);
    }
    vars[e.name] = e.value;
  }
  return vars;
}

/**
 * Runs `install` (npm) with `base` plus the job's private registries and secret environment.
 * Without any, `base` as given and nothing written.
 */
export async function withPrivateInstall<T>(base: Record<string, string>, install: JobInstall | undefined, log: (text: string) => void, run: (env: Record<string, string>) => Promise<T>): Promise<T> {
  if (install === undefined || (install.registries.length === 0 && install.env.length === 0)) return run(base);
  const vars = installVariables(install);
  const described = [
    ...install.registries.map((r) => `${r.scope ?? '(default)'} → ${r.url} (token ${r.tokenSecret}${r.alwaysAuth ? ', always-auth' : ''})`),
    ...install.env.map((e) => `${e.name} from ${e.secret}`),
  ];
  log(`dependency install with the workflow's ${install.registries.length > 0 ? 'registries' : ''}${install.registries.length > 0 && install.env.length > 0 ? ' and ' : ''}${install.env.length > 0 ? 'installEnv' : ''}: ${described.join('; ')}`);
  // mkdtemp makes the directory 0700: nobody else lists or reads it.
  const dir = await mkdtemp(join(tmpdir(), 'svc-install-'));
  try {
    const env = { ...base, ...vars };
    if (install.registries.length > 0) {
      const file = join(dir, 'npmrc');
      await writeFile(file, userConfigText(install), { mode: 0o600, flag: 'wx' });
      env['npm_config_userconfig'] = file;
    }
    return await run(env);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
