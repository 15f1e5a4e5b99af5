// What `svc dev` keeps between starts, under `<dataDir>/dev/`: the org's platform token, the
// git source's id, the agent token (state.json, mode 0600) and the webhook secret the
// post-receive hook signs with (hook.secret, 0600). A second start reuses them, so the remote,
// the hook and earlier runs keep working.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Type, type Static } from 'typebox';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';
import { SvcError } from '../../core/errors.ts';

export const DevState = Type.Object(
  {
    version: Type.Literal(1),
    orgId: Type.String(),
    platformToken: Type.Optional(Type.String()),
    /** Source id per repository path (svc dev may serve different repositories over time). */
    sources: Type.Record(Type.String(), Type.String()),
    agentToken: Type.Optional(Type.String()),
    /** A personal access token of the dev org, for `svc runs` through the relay. */
    pat: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type DevState = Static<typeof DevState>;

const checkState = compileSchema(DevState);

export interface DevPaths {
  dataDir: string;
  /** `<dataDir>/dev`. */
  stateDir: string;
  stateFile: string;
  hookSecretFile: string;
  /** Shell exports for the `svc runs` commands (relay URL, PAT, org). */
  cliEnvFile: string;
  /** Bare repositories svc dev serves. */
  gitDir: string;
  agentWorkDir: string;
  logFile: string;
}

export function devPaths(dataDir: string): DevPaths {
  const stateDir = join(dataDir, 'dev');
  return {
    dataDir,
    stateDir,
    stateFile: join(stateDir, 'state.json'),
    hookSecretFile: join(stateDir, 'hook.secret'),
    cliEnvFile: join(stateDir, 'env.sh'),
    gitDir: join(dataDir, 'git'),
    agentWorkDir: join(dataDir, 'agent'),
    logFile: join(dataDir, 'logs', 'svc-dev.log'),
  };
}

export async function readState(paths: DevPaths, orgId: string): Promise<DevState> {
  let text: string;
  try {
    text = await readFile(paths.stateFile, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, orgId, sources: {} };
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new SvcError('SVC_ERR_DEV_STATE', `${paths.stateFile} is not JSON; remove it to provision again (earlier runs stay in the database)`);
  }
  const checked = checkState.validate(parsed);
  if (!checked.ok) {
    throw new SvcError('SVC_ERR_DEV_STATE', `${paths.stateFile} is not valid (${formatIssues(checked.issues)}); remove it to provision again`);
  }
  return checked.value;
}

export async function writeState(paths: DevPaths, state: DevState): Promise<void> {
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  const temp = `${paths.stateFile}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, paths.stateFile);
}

/** The hook's webhook secret: read, or generated once. */
export async function hookSecret(paths: DevPaths): Promise<{ secret: string; created: boolean }> {
  try {
    const secret = (await readFile(paths.hookSecretFile, 'utf8')).trim();
    if (secret.length >= 16) return { secret, created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('hex');
  await writeFile(paths.hookSecretFile, `${secret}\n`, { mode: 0o600 });
  return { secret, created: true };
}

/** `. <dataDir>/dev/env.sh` points `svc runs show/logs` at this svc dev's relay (mode 0600). */
export async function writeCliEnv(paths: DevPaths, settings: { platformUrl: string; token: string; org: string }): Promise<void> {
  await mkdir(paths.stateDir, { recursive: true, mode: 0o700 });
  const quote = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
  const text = [
    '# Written by `svc dev` at every start: `. ./.svc-data/dev/env.sh` then `svc runs show <id>` or `svc runs logs <id>`.',
    `export SVC_PLATFORM_URL=${quote(settings.platformUrl)}`,
    `export SVC_TOKEN=${quote(settings.token)}`,
    `export SVC_ORG=${quote(settings.org)}`,
    '',
  ].join('\n');
  const temp = `${paths.cliEnvFile}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temp, text, { mode: 0o600 });
  await rename(temp, paths.cliEnvFile);
}
