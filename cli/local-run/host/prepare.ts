// What a local run's jobs restore from, made the way a build job makes it: the workflow
// directory bundled from the working tree (with the lock compiled in memory, so uncommitted
// changes run and the content hash check passes), `npm ci --ignore-scripts` once into a
// dependency tarball, both served over loopback to the in-process agent.
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { AGENT_SDK_VERSION, DEFAULT_RUNNER_PATH, PACKAGE_ROOT } from '../../../agent/agent.ts';
import { createProcessSandbox } from '../../../plugins/sandboxes/process/index.ts';
import { installDependencies } from '../../../agent/build-job/deps.ts';
import { bundleSource, type SourceBundle } from '../../../agent/build-job/source-bundle.ts';
import type { SandboxChoice } from '../../../agent/jobs/executor.ts';
import { pathWithNode } from '../../../agent/jobs/restore.ts';
import type { LocalFileServer } from './file-server.ts';

export interface LocalSources {
  /** Source tarball per distinct hashFiles list (most workflows share one). */
  source(hashFiles: readonly string[] | undefined): Promise<{ url: string; digest: string; bundle: SourceBundle }>;
  /** The dependency tarball, when `.svc/package-lock.json` exists (installed once, on first use). */
  deps(): Promise<{ url: string; hash: string } | null>;
}

export function localSources(options: { repoRoot: string; lockText: string; workDir: string; files: LocalFileServer; signal: AbortSignal; log(text: string): void }): LocalSources {
  const bundles = new Map<string, Promise<{ url: string; digest: string; bundle: SourceBundle }>>();
  let first: Promise<{ url: string; digest: string; bundle: SourceBundle }> | undefined;
  let deps: Promise<{ url: string; hash: string } | null> | undefined;
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
        return { url: options.files.serve(bundle.file), digest: bundle.sha256, bundle };
      })();
      bundles.set(key, entry);
      first ??= entry;
    }
    return entry;
  };
  return {
    source,
    deps() {
      deps ??= (async () => {
        const { bundle } = await (first ?? source(undefined));
        if (!bundle.files.includes('.svc/package-lock.json')) return null;
        const started = Date.now();
        const home = join(options.workDir, 'home');
        await mkdir(home, { recursive: true });
        const out = await installDependencies({
          svcCopy: join(bundle.stageDir, '.svc'),
          out: join(options.workDir, 'deps.tar.gz'),
          env: { PATH: pathWithNode(), HOME: home, npm_config_cache: join(home, '.npm'), LANG: 'C.UTF-8' },
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
