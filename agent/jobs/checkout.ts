// Check the repository out at the run's commit when no source tarball is cached. Every git
// command is an argument array; the credential travels in the environment (an
// `http.extraHeader` set through GIT_CONFIG_*), never on a command line where `ps` shows it.
// Submodules and LFS content, when the job asks for them, come after the tree (submodules.ts).
import { mkdir } from 'node:fs/promises';
import { execa } from 'execa';
import type { Static } from 'typebox';
import type { SourceAuth } from '../../schemas/wire/agent.ts';
import { JobFailure } from './failure.ts';
import { checkoutExtras } from './submodules.ts';

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

export interface CheckoutOptions {
  dir: string;
  auth: Static<typeof SourceAuth>;
  sha: string;
  /** Scratch HOME for git (no user or system config is read). */
  home: string;
  path: string;
  /** History depth; 0 fetches full history. Default 1. */
  depth?: number;
  /** `checkout.submodules`: the commit's submodules, recursively, at their recorded commits. */
  submodules?: boolean;
  /** `checkout.lfs`: LFS files with their content; otherwise they stay pointers. */
  lfs?: boolean;
  /** GIT_ALLOW_PROTOCOL for this fetch (a submodule's: the one transport its checked URL uses). */
  protocol?: string;
  /** The proxy and CA variables the agent passes to jobs (SVC_AGENT_PASS_ENV): git reads them too. */
  passedEnv?: Readonly<Record<string, string>> | undefined;
  signal: AbortSignal;
  log(text: string): void;
}

export function gitEnv(auth: Static<typeof SourceAuth>, home: string, path: string, passed: Readonly<Record<string, string>> = {}): Record<string, string> {
  const env: Record<string, string> = {
    // The agent's pass-through policy (HTTPS_PROXY, GIT_SSL_CAINFO, …) first: git's own settings below win.
    ...passed,
    PATH: path,
    HOME: home,
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    LANG: 'C.UTF-8',
    // No LFS download unless the job asks for one (checkoutExtras runs `git lfs pull` then).
    GIT_LFS_SKIP_SMUDGE: '1',
  };
  if (auth.token !== undefined && auth.token !== '') {
    const basic = Buffer.from(`${auth.username ?? 'x-access-token'}:${auth.token}`, 'utf8').toString('base64');
    env['GIT_CONFIG_COUNT'] = '1';
    env['GIT_CONFIG_KEY_0'] = 'http.extraHeader';
    env['GIT_CONFIG_VALUE_0'] = `Authorization: Basic ${basic}`;
  }
  return env;
}

async function git(args: string[], options: CheckoutOptions, env: Record<string, string>): Promise<void> {
  const result = await execa('git', args, { cwd: options.dir, env, extendEnv: false, reject: false, all: true, cancelSignal: options.signal, timeout: 10 * 60_000 });
  if (result.exitCode !== 0) {
    const output = String(result.all ?? '').trim().split('\n').slice(-5).join(' | ');
    throw new JobFailure('SVC_ERR_AGENT_CHECKOUT', `git ${args[0]} failed (exit ${String(result.exitCode)}): ${output}`);
  }
}

/** Refuses a commit id or clone URL git could read as something else (an option, a ref name). */
export function validateCheckout(sha: string, url: string): void {
  if (!SHA.test(sha)) throw new JobFailure('SVC_ERR_AGENT_CHECKOUT', `the run's commit ${JSON.stringify(sha.slice(0, 80))} is not a full hex commit id`);
  if (url === '' || url.startsWith('-')) throw new JobFailure('SVC_ERR_AGENT_CHECKOUT', `the clone URL ${JSON.stringify(url.slice(0, 200))} is not valid`);
}

/** The dispatch's `checkout` flags as checkout options. */
export const checkoutFlags = (setting: { submodules?: boolean; lfs?: boolean } | undefined): Pick<CheckoutOptions, 'submodules' | 'lfs'> => ({
  submodules: setting?.submodules === true,
  lfs: setting?.lfs === true,
});

export async function checkout(options: CheckoutOptions): Promise<void> {
  await checkoutOne(options);
  if (options.submodules !== true && options.lfs !== true) return;
  await checkoutExtras({
    ...options,
    submodules: options.submodules === true,
    lfs: options.lfs === true,
    envFor: (auth) => gitEnv(auth, options.home, options.path, options.passedEnv),
    // A submodule at the superproject's depth, fetched on its own like the superproject.
    checkoutSub: (sub) => checkoutOne({ ...options, ...sub }),
  });
}

async function checkoutOne(options: CheckoutOptions): Promise<void> {
  validateCheckout(options.sha, options.auth.cloneUrl);
  const url = options.auth.cloneUrl;
  await mkdir(options.dir, { recursive: true });
  const env = gitEnv(options.auth, options.home, options.path, options.passedEnv);
  if (options.protocol !== undefined) env['GIT_ALLOW_PROTOCOL'] = options.protocol;
  const depth = options.depth ?? 1;
  options.log(`checking out ${options.sha}${depth === 0 ? ' (full history)' : ''}`);
  await git(['init', '-q'], options, env);
  await git(['fetch', '-q', ...(depth === 0 ? [] : [`--depth=${depth}`]), '--no-tags', '--', url, options.sha], options, env);
  await git(['-c', 'advice.detachedHead=false', 'checkout', '-q', '--detach', 'FETCH_HEAD'], options, env);
}
