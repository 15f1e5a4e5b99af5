// `checkout.submodules` and `checkout.lfs` on top of a job's checkout (docs/agent.md "Submodules
// and LFS"). Both checkout paths (the repository store and the per-job fetch) write the
// superproject's tree first and then call `checkoutExtras`, which
// - reads the commit's gitlinks (`git ls-tree`) and its `.gitmodules` (from the commit's blob,
//   never the work tree), refuses a hostile entry before anything of it is fetched, and has each
//   submodule written at the commit the superproject records by the caller's own checkout
//   (so the store's cache and depth policy apply), then recurses into it;
// - for LFS, configures the lfs filter in the repository's own `.git/config` (so `git status` in
//   the job sees the real files as unchanged) and runs `git lfs pull` from the repository's URL.
// The URL policy is git's `protocol.allow` idea, tightened: https, ssh and git always; file only
// when the job's repository itself is local (git's own default keeps file:// from submodules,
// as it could read any repository on the agent host); http only on the clone URL's own origin;
// a transport helper (`ext::`, `fd::`) never. Every git call is an argument array, no shell.
import { execFile } from 'node:child_process';
import { appendFile, lstat, mkdir, realpath } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import type { Static } from 'typebox';
import type { SourceAuth } from '../../schemas/wire/agent.ts';
import { JobFailure } from './failure.ts';

type Auth = Static<typeof SourceAuth>;

/** Nesting below the job's repository, and submodules in all: bounds against a hostile tree. */
export const MAX_SUBMODULE_NESTING = 8;
export const MAX_SUBMODULES = 256;

export interface SubmoduleSpec {
  name: string;
  /** Relative to the repository that records it. */
  path: string;
  sha: string;
  /** Resolved (relative URLs against the parent's URL) and checked against the policy. */
  url: string;
  /** The git transport the URL uses (the only one git may use to fetch it). */
  protocol: 'file' | 'https' | 'http' | 'ssh' | 'git';
}

export interface ExtrasOptions {
  /** The repository's work tree (its tree already written at `sha`). */
  dir: string;
  sha: string;
  auth: Auth;
  signal: AbortSignal;
  log(text: string): void;
  submodules: boolean;
  lfs: boolean;
  /** The git environment for a repository with this credential (checkout.ts `gitEnv`). */
  envFor(auth: Auth): Record<string, string>;
  /** Writes a submodule's commit into `dir` (an empty directory) the caller's way. */
  checkoutSub(sub: { dir: string; auth: Auth; sha: string; protocol: SubmoduleSpec['protocol'] }): Promise<void>;
}

const refuse = (name: string, repository: string, why: string): JobFailure =>
  new JobFailure('SVC_ERR_AGENT_SUBMODULE_REFUSED', `SVC_ERR_AGENT_SUBMODULE_REFUSED: submodule ${JSON.stringify(name)} of ${repository} refused: ${why}; nothing of it was fetched`);

function run(cwd: string, args: string[], env: Record<string, string>, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, env, signal, timeout: 10 * 60_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (signal.aborted) return reject(signal.reason as Error);
      if (error === null) return resolve(stdout);
      const how = typeof error.code === 'number' ? `exit ${String(error.code)}` : String(error.code ?? error.message);
      const output = `${stdout}\n${stderr}`.trim().split('\n').slice(-5).join(' | ');
      const sub = args.find((a) => !a.startsWith('-')) ?? args[0];
      if (args.includes('lfs') && /'lfs' is not a git command|git-lfs: (command )?not found/.test(output)) {
        reject(new JobFailure('SVC_ERR_AGENT_LFS_UNAVAILABLE', `the job asks for checkout.lfs but git-lfs cannot run on this agent: ${output}`));
      } else {
        reject(new JobFailure('SVC_ERR_AGENT_CHECKOUT', `git ${sub === 'lfs' ? `lfs ${args[args.indexOf('lfs') + 1] ?? ''}`.trim() : sub} failed (${how}): ${output}`));
      }
    });
  });
}

const CONTROL = /[\x00-\x1f\x7f]/;
const HELPER = /^[A-Za-z0-9][A-Za-z0-9+.-]*::/;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
// git reads `[user@]host:path` (a colon before any slash) as ssh.
const SCP = /^(?:([^@/]*)@)?(\[[^\]]*\]|[^/:]+):/;
const isLocal = (url: string): boolean => url.startsWith('/') || /^file:\/\//i.test(url);

/** `why` a path (a `.gitmodules` path or a gitlink's) could leave the work tree, or undefined. */
export function badPath(path: string): string | undefined {
  if (path === '' || CONTROL.test(path)) return 'its path is empty or holds control characters';
  if (path.startsWith('/') || path.includes('\\')) return `its path ${JSON.stringify(path)} is absolute or uses backslashes`;
  for (const part of path.split('/')) {
    if (part === '..' || part === '.' || part === '') return `its path ${JSON.stringify(path)} leaves the workspace (or has empty or "." components)`;
    if (part.toLowerCase() === '.git') return `its path ${JSON.stringify(path)} goes through a .git directory`;
  }
  return undefined;
}

/** Applies `./` and `../` segments of a relative submodule URL to the parent's path. */
function applyRelative(basePath: string, rel: string): string | undefined {
  const parts = basePath.replace(/\/+$/, '').split('/');
  const lead = parts[0] === '' ? [''] : [];
  const rest = parts.filter((p, i) => !(i === 0 && p === ''));
  for (const seg of rel.split('/')) {
    if (seg === '.' || seg === '') continue;
    if (seg === '..') {
      if (rest.length === 0) return undefined;
      rest.pop();
    } else {
      rest.push(seg);
    }
  }
  return [...lead, ...rest].join('/');
}

/** The submodule URL resolved against `base` (the URL of the repository recording it), or why not. */
export function resolveSubmoduleUrl(raw: string, base: string): { url: string; protocol: SubmoduleSpec['protocol'] } | { why: string } {
  if (CONTROL.test(raw)) return { why: 'its URL holds control characters' };
  if (raw.startsWith('-')) return { why: `its URL ${JSON.stringify(raw)} looks like a command-line option (--upload-pack style)` };
  let url = raw;
  if (raw.startsWith('./') || raw.startsWith('../')) {
    const scheme = SCHEME.exec(base);
    const scp = scheme === null ? SCP.exec(base) : null;
    if (scheme !== null) {
      const u = new URL(base);
      const path = applyRelative(decodeURIComponent(u.pathname), raw);
      if (path === undefined) return { why: `its relative URL ${JSON.stringify(raw)} climbs above ${base}` };
      u.pathname = path;
      u.search = '';
      u.hash = '';
      url = u.toString();
    } else if (scp !== null && !base.startsWith('/')) {
      const head = base.slice(0, scp[0].length);
      const path = applyRelative(base.slice(scp[0].length), raw);
      if (path === undefined) return { why: `its relative URL ${JSON.stringify(raw)} climbs above ${base}` };
      url = head + path;
    } else {
      const path = applyRelative(base, raw);
      if (path === undefined || path === '') return { why: `its relative URL ${JSON.stringify(raw)} climbs above ${base}` };
      url = path;
    }
  }
  if (HELPER.test(url)) return { why: `its URL ${JSON.stringify(url)} names a git transport helper (${url.split('::')[0]}::), which can run commands; only file, https, ssh and git are allowed` };
  const scheme = SCHEME.exec(url);
  let protocol: SubmoduleSpec['protocol'];
  if (scheme !== null) {
    const name = scheme[1]!.toLowerCase();
    const map: Record<string, SubmoduleSpec['protocol']> = { https: 'https', http: 'http', ssh: 'ssh', 'git+ssh': 'ssh', 'ssh+git': 'ssh', git: 'git', file: 'file' };
    if (map[name] === undefined) return { why: `its URL ${JSON.stringify(url)} uses the transport ${name}; only file, https, ssh and git are allowed` };
    protocol = map[name];
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { why: `its URL ${JSON.stringify(url)} is not a valid URL` };
    }
    if (parsed.hostname.startsWith('-') || decodeURIComponent(parsed.username).startsWith('-')) return { why: `its URL ${JSON.stringify(url)} has a host or user that looks like a command-line option` };
    if (protocol === 'http' && (!/^http:\/\//i.test(base) || new URL(base).origin !== parsed.origin)) {
      return { why: `its URL ${JSON.stringify(url)} uses plain http on an origin other than the job's repository; only file, https, ssh and git are allowed` };
    }
  } else if (url.startsWith('/')) {
    protocol = 'file';
  } else {
    const scp = SCP.exec(url);
    if (scp === null) return { why: `its URL ${JSON.stringify(url)} is neither a URL, an absolute path nor a relative URL (./ or ../)` };
    if ((scp[1] ?? '').startsWith('-') || scp[2]!.startsWith('-')) return { why: `its URL ${JSON.stringify(url)} has a host or user that looks like a command-line option` };
    protocol = 'ssh';
  }
  if (protocol === 'file' && !isLocal(base)) return { why: `its URL ${JSON.stringify(url)} is a local path, allowed only when the job's repository is itself local (it could read any repository on the agent host)` };
  return { url, protocol };
}

/** The credential goes only to the clone URL's own origin (an http header must not travel to another host). */
export function submoduleAuth(parent: Auth, url: string): Auth {
  const origin = (u: string): string | undefined => {
    try {
      return /^https?:\/\//i.test(u) ? new URL(u).origin : undefined;
    } catch {
      return undefined;
    }
  };
  const same = origin(url) !== undefined && origin(url) === origin(parent.cloneUrl);
  if (!same || parent.token === undefined) return { cloneUrl: url };
  return { cloneUrl: url, token: parent.token, ...(parent.username === undefined ? {} : { username: parent.username }) };
}

interface TreeListing {
  gitlinks: Array<{ path: string; sha: string }>;
  hasModules: boolean;
  /** Any `.gitattributes`: without one no file can be an LFS file, and git-lfs is not run. */
  hasAttributes: boolean;
}

async function listTree(dir: string, sha: string, env: Record<string, string>, signal: AbortSignal): Promise<TreeListing> {
  const tree = await run(dir, ['ls-tree', '-r', '-z', '--full-tree', sha], env, signal);
  const listing: TreeListing = { gitlinks: [], hasModules: false, hasAttributes: false };
  for (const entry of tree.split('\0')) {
    const tab = entry.indexOf('\t');
    if (tab < 0) continue;
    const [mode, , object] = entry.slice(0, tab).split(' ');
    const path = entry.slice(tab + 1);
    if (mode === '160000') listing.gitlinks.push({ path, sha: object! });
    else if (path === '.gitmodules') listing.hasModules = true;
    else if (path === '.gitattributes' || path.endsWith('/.gitattributes')) listing.hasAttributes = true;
  }
  return listing;
}

/** The commit's submodules, checked: every `.gitmodules` path, and the name and URL of each gitlink's entry. */
async function planSubmodules(dir: string, sha: string, auth: Auth, tree: TreeListing, env: Record<string, string>, signal: AbortSignal): Promise<SubmoduleSpec[]> {
  const { gitlinks, hasModules } = tree;
  if (gitlinks.length === 0) return [];
  const entries = new Map<string, { path?: string; url?: string }>();
  if (hasModules) {
    // From the commit's blob: includes are not followed (`--blob` reads that one file).
    const listing = await run(dir, ['config', '--blob', `${sha}:.gitmodules`, '-z', '--list'], env, signal);
    for (const item of listing.split('\0')) {
      const nl = item.indexOf('\n');
      const key = nl < 0 ? item : item.slice(0, nl);
      if (!key.startsWith('submodule.')) continue;
      const dot = key.lastIndexOf('.');
      const name = key.slice('submodule.'.length, dot);
      const variable = key.slice(dot + 1);
      if (name === '' || (variable !== 'path' && variable !== 'url')) continue;
      const e = entries.get(name) ?? {};
      e[variable] = nl < 0 ? '' : item.slice(nl + 1);
      entries.set(name, e);
    }
  }
  const repository = auth.cloneUrl;
  for (const [name, e] of entries) {
    if (CONTROL.test(name) || name.split(/[/\\]/).includes('..')) throw refuse(name, repository, 'its name holds control characters or ".." components');
    const bad = e.path === undefined ? undefined : badPath(e.path);
    if (bad !== undefined) throw refuse(name, repository, bad);
  }
  const specs: SubmoduleSpec[] = [];
  for (const link of gitlinks) {
    const found = [...entries].find(([, e]) => e.path === link.path);
    const bad = badPath(link.path);
    if (bad !== undefined) throw refuse(found?.[0] ?? link.path, repository, bad);
    if (found === undefined || found[1].url === undefined || found[1].url === '') throw refuse(link.path, repository, `.gitmodules has no URL for the gitlink at ${JSON.stringify(link.path)}`);
    const resolved = resolveSubmoduleUrl(found[1].url, repository);
    if ('why' in resolved) throw refuse(found[0], repository, resolved.why);
    specs.push({ name: found[0], path: link.path, sha: link.sha, ...resolved });
  }
  return specs;
}

/** The submodule's directory, inside the work tree and not a symlink (created empty if git left none). */
async function subDir(dir: string, spec: SubmoduleSpec, repository: string): Promise<string> {
  const target = join(dir, spec.path);
  const root = await realpath(dir);
  // Git wrote the gitlink's parent directories with the tree; nothing is created above it here.
  const parent = await realpath(dirname(target)).catch(() => undefined);
  if (parent === undefined || (parent !== root && !parent.startsWith(root + sep))) throw refuse(spec.name, repository, `its path ${JSON.stringify(spec.path)} leads outside the workspace (or its directory is missing)`);
  const found = await lstat(target).catch(() => undefined);
  if (found !== undefined && !found.isDirectory()) throw refuse(spec.name, repository, `its path ${JSON.stringify(spec.path)} is not a directory in the commit's tree`);
  if (found === undefined) await mkdir(target);
  return target;
}

/** `git config` value quoting: the name and URL are written into the job's own `.git/config`. */
const quote = (text: string): string => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** LFS endpoint derivation as git-lfs does it, set explicitly so a `.lfsconfig` in the tree cannot redirect it. */
function lfsRemote(url: string): { remote: string; endpoint?: string } {
  if (url.startsWith('/')) return { remote: `file://${url}`, endpoint: `file://${url}` };
  if (/^file:\/\//i.test(url)) return { remote: url, endpoint: url };
  if (/^https?:\/\//i.test(url)) {
    const bare = url.replace(/\/+$/, '');
    return { remote: url, endpoint: `${bare}${bare.endsWith('.git') ? '' : '.git'}/info/lfs` };
  }
  return { remote: url };
}

async function lfsPull(dir: string, auth: Auth, options: ExtrasOptions): Promise<void> {
  const env = options.envFor(auth);
  delete env['GIT_LFS_SKIP_SMUDGE'];
  const { remote, endpoint } = lfsRemote(auth.cloneUrl);
  if (endpoint !== undefined) {
    const n = Number(env['GIT_CONFIG_COUNT'] ?? '0');
    Object.assign(env, { GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: 'lfs.url', [`GIT_CONFIG_VALUE_${n}`]: endpoint });
  }
  // The filter in the job's own config: the real files then read as unchanged to `git status`.
  await run(dir, ['lfs', 'install', '--local', '--skip-repo'], env, options.signal);
  await run(dir, ['lfs', 'pull', remote], env, options.signal);
}

/** Submodules (recursively) and LFS content for the repository at `options.dir`. */
export async function checkoutExtras(options: ExtrasOptions): Promise<void> {
  let count = 0;
  const visit = async (dir: string, sha: string, auth: Auth, nesting: number): Promise<void> => {
    const env = options.envFor(auth);
    const tree = await listTree(dir, sha, env, options.signal);
    if (options.submodules) {
      const specs = await planSubmodules(dir, sha, auth, tree, env, options.signal);
      if (specs.length > 0 && nesting >= MAX_SUBMODULE_NESTING) throw refuse(specs[0]!.name, auth.cloneUrl, `submodules nest deeper than ${MAX_SUBMODULE_NESTING} levels`);
      for (const spec of specs) {
        if (++count > MAX_SUBMODULES) throw refuse(spec.name, auth.cloneUrl, `the checkout has more than ${MAX_SUBMODULES} submodules`);
        const target = await subDir(dir, spec, auth.cloneUrl);
        options.log(`submodule ${spec.path}: ${spec.sha} from ${spec.url}`);
        const subAuth = submoduleAuth(auth, spec.url);
        await options.checkoutSub({ dir: target, auth: subAuth, sha: spec.sha, protocol: spec.protocol });
        // Registered as git registers an initialised submodule, so `git submodule` in the job sees it.
        await appendFile(join(dir, '.git', 'config'), `[submodule ${quote(spec.name)}]\n\turl = ${quote(spec.url)}\n\tactive = true\n`);
        await visit(target, spec.sha, subAuth, nesting + 1);
      }
    }
    if (options.lfs && tree.hasAttributes) await lfsPull(dir, auth, options);
  };
  await visit(options.dir, options.sha, options.auth, 0);
}
