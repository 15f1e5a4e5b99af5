// What a local run's jobs restore from, made the way a build job makes it: the workflow
// directory bundled from the working tree (with the lock compiled in memory, so uncommitted
// changes run and the content hash check passes) laid over the repository's files (HEAD's tree,
// as an agent's checkout holds it; repo-files.ts), `npm ci --ignore-scripts` once into a
// dependency tarball, both served over loopback to the in-process agent.
import { cp, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { AGENT_SDK_VERSION, DEFAULT_RUNNER_PATH, PACKAGE_ROOT } from '../../../agent/agent.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { installDependencies } from '../../../agent/build-job/deps.ts';
import { bundleSource, type SourceBundle } from '../../../agent/build-job/source-bundle.ts';
import { listTree, writeTarball } from '../../../agent/build-job/tarball.ts';
import type { SandboxChoice } from '../../../agent/jobs/executor.ts';
import { pathWithNode } from '../../../agent/jobs/restore.ts';
import type { JobInstall } from '../../../agent/jobs/private-install.ts';
import type { LocalFileServer } from './file-server.ts';
import { stageRepoFiles, type RepoFiles, type RepoFilesOptions } from './repo-files.ts';

export interface LocalSources {
  /** Source tarball per distinct hashFiles list (most workflows share one): the repository's files with the bundle on top. */
  source(hashFiles: readonly string[] | undefined): Promise<{ url: string; digest: string; bundle: SourceBundle }>;
  /** The repository files every job gets (staged once, on first use). */
  repoFiles(): Promise<RepoFiles>;
  /**
   * The dependency tarball, when `.svc/package-lock.json` exists (installed once, on first use),
   * with the run's workflows' registries and installEnv (`install`, values from the local secrets).
   */
  deps(install?: JobInstall): Promise<{ url: string; hash: string } | null>;
}

export function localSources(options: {
  repoRoot: string;
  lockText: string;
  workDir: string;
  files: LocalFileServer;
  signal: AbortSignal;
  /** The user's proxy and CA variables (the pass-through policy): the `npm ci` here reads them too. */
  passedEnv?: Readonly<Record<string, string>>;
  log(text: string): void;
  /** Where the repository's files come from (HEAD, HEAD plus uncommitted changes, the working tree). */
  repo: Pick<RepoFilesOptions, 'git' | 'uncommitted'>;
}): LocalSources {
  const bundles = new Map<string, Promise<{ url: string; digest: string; bundle: SourceBundle }>>();
  let first: Promise<{ url: string; digest: string; bundle: SourceBundle }> | undefined;
  let deps: Promise<{ url: string; hash: string } | null> | undefined;
  let repo: Promise<RepoFiles> | undefined;
  const repoFiles = () => {
    repo ??= (async () => {
      const started = Date.now();
      const staged = await stageRepoFiles({ root: options.repoRoot, ...options.repo, into: join(options.workDir, 'repo'), signal: options.signal });
      const from = { head: 'HEAD', 'head+uncommitted': 'HEAD with the uncommitted changes', 'working-tree': 'the working tree' }[staged.origin];
      options.log(`repository files: ${staged.files} from ${from} in ${Date.now() - started} ms`);
      if (staged.skippedLinks.length > 0) options.log(`left out ${staged.skippedLinks.length} symlink(s) pointing outside the repository: ${staged.skippedLinks.slice(0, 5).join(', ')}${staged.skippedLinks.length > 5 ? ', …' : ''}`);
      return staged;
    })();
    return repo;
  };
  const source = (hashFiles: readonly string[] | undefined) => {
    const key = JSON.stringify(hashFiles ?? []);
    let entry = bundles.get(key);
    if (entry === undefined) {
      const workDir = join(options.workDir, `bundle-${bundles.size}`);
      entry = (async () => {
        await mkdir(workDir, { recursive: true });
        const started = Date.now();
        const bundle = await bundleSource({ repoRoot: options.repoRoot, workDir, lockText: options.lockText, ...(hashFiles === undefined ? {} : { hashFiles }) });
        options.log(`bundled ${bundle.files.length} files of .svc/ (${bundle.bytes} bytes, sha256 ${bundle.sha256.slice(0, 12)}) in ${Date.now() - started} ms`);
        // The job's tree: the repository's files, then the bundle over them (its .svc/ and
        // hashFiles are what the content hash covers), as an agent lays the cached source over
        // its checkout.
        const tree = join(workDir, 'tree');
        await cp((await repoFiles()).dir, tree, { recursive: true, verbatimSymlinks: true, errorOnExist: false, force: true });
        await cp(bundle.stageDir, tree, { recursive: true, verbatimSymlinks: true, errorOnExist: false, force: true });
        const tarball = await writeTarball(tree, await listTree(tree, (await readdir(tree)).sort()), join(workDir, 'tree.tar.gz'));
        await rm(tree, { recursive: true, force: true });
        return { url: options.files.serve(tarball.file), digest: tarball.sha256, bundle };
      })();
      bundles.set(key, entry);
      first ??= entry;
    }
    return entry;
  };
  return {
    source,
    repoFiles,
    deps(install) {
      deps ??= (async () => {
        const { bundle } = await (first ?? source(undefined));
        if (!bundle.files.includes('.svc/package-lock.json')) return null;
        const started = Date.now();
        const home = join(options.workDir, 'home');
        await mkdir(home, { recursive: true });
        const out = await installDependencies({
          svcCopy: join(bundle.stageDir, '.svc'),
          out: join(options.workDir, 'deps.tar.gz'),
          env: { ...options.passedEnv, PATH: pathWithNode(), HOME: home, npm_config_cache: join(home, '.npm'), LANG: 'C.UTF-8' },
          install,
          signal: options.signal,
          log: options.log,
        });
        await rm(join(bundle.stageDir, '.svc', 'node_modules'), { recursive: true, force: true });
        options.log(`installed dependencies (npm ci) in ${Date.now() - started} ms`);
        return { url: options.files.serve(out.file), hash: out.sha256 };
      })();
      return deps;
    },
  };
}

export interface LocalAgentEnvironment {
  sandboxes: ReadonlyMap<string, SandboxChoice>;
  defaultSandbox: string;
  runnerPath: string;
  readPaths: readonly string[];
  sdkVersion: string;
  logger: Logger;
}

/** The agent's `process` sandbox (bubblewrap per SVC_AGENT_BWRAP, default auto) and the real step runner. */
export async function localAgentEnvironment(options: { bwrap?: 'auto' | 'always' | 'never'; logger?: Logger } = {}): Promise<LocalAgentEnvironment> {
  const sandbox = createProcessSandbox({ bwrap: options.bwrap ?? 'auto', network: true });
  const availability = await sandbox.available();
  return {
    sandboxes: new Map([['process', { name: 'process', sandbox, availability }]]),
    defaultSandbox: 'process',
    runnerPath: DEFAULT_RUNNER_PATH,
    readPaths: [process.execPath, PACKAGE_ROOT],
    sdkVersion: AGENT_SDK_VERSION,
    logger: options.logger ?? pino({ level: 'silent' }),
  };
}
