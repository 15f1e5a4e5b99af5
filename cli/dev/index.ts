// `svc dev`: relay + orchestrator + one agent on embedded defaults, wired to the developer's
// repository through a bare repository svc dev serves (remote `svc`, post-receive hook → signed
// webhook → relay → orchestrator → agent). See docs/dev.md.
import { createWriteStream } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { installPostReceiveHook } from '../git-hook/install.ts';
import { createLogger } from '../../core/logging.ts';
import { InputError, isSvcError, messageOf } from '../../core/errors.ts';
import { currentBranch, ensureBareRepository, ensureRemote, ensureWorkCopy, excludeFromGit, headSha, repositoryRoot, tryGit } from './git.ts';
import { createReporter, type Reporter } from './reporter.ts';
import { choosePort, DEV_ORG, startDevStack, type DevStack } from './stack.ts';
import { devPaths, hookSecret } from './state.ts';
import { recentRuns, watchRuns } from './watch.ts';

export const DEV_REMOTE = 'svc';
/** The data directory's name, next to the repository (or the working directory with --example). */
export const DATA_DIR_NAME = '.svc-data';

export interface DevOptions {
  /** The developer's repository (default: the git repository of `cwd`). */
  repo?: string | undefined;
  /** An example directory copied once to `<dataDir>/<name>-work` as its own repository. */
  example?: string | undefined;
  dataDir?: string | undefined;
  port?: number | undefined;
  relayPort?: number | undefined;
  /** `git push svc HEAD` once everything is ready (a no-op when the remote has HEAD already). */
  push?: boolean;
  json?: boolean;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  stdout?: NodeJS.WritableStream & { isTTY?: boolean };
  stderr?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Test hook: resolves when svc dev should stop, instead of a signal. */
  stopSignal?: Promise<unknown>;
}

/** The inherited environment without SVC_*: svc dev always runs on its own embedded defaults. */
export function devBaseEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) if (!name.startsWith('SVC_')) out[name] = value;
  return out;
}

function checkPort(value: number | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0 || value > 65535) throw new InputError('SVC_ERR_CLI_USAGE', `${flag} must be a port number 0-65535 (0: any free port), got ${String(value)}`);
  return value;
}

const safeName = (text: string) => text.replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^[-.]+/, '').slice(0, 80) || 'repo';

function isInside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && rel !== child);
}

interface Layout {
  repo: string;
  dataDir: string;
  exampleWork: { example: string; dir: string } | undefined;
}

async function layout(options: DevOptions, cwd: string, env: NodeJS.ProcessEnv): Promise<Layout> {
  if (options.repo !== undefined && options.example !== undefined) throw new InputError('SVC_ERR_CLI_USAGE', 'pass either --repo or --example, not both');
  const explicitData = options.dataDir ?? (env['SVC_DATA_DIR'] || undefined);
  if (options.example !== undefined) {
    const example = resolve(cwd, options.example);
    const svcDir = await stat(join(example, '.svc')).catch(() => null);
    if (svcDir === null || !svcDir.isDirectory()) throw new InputError('SVC_ERR_DEV_EXAMPLE', `--example ${options.example} has no .svc/ directory (looked in ${example})`);
    const dataDir = resolve(cwd, explicitData ?? DATA_DIR_NAME);
    if (isInside(example, dataDir)) throw new InputError('SVC_ERR_CLI_USAGE', `the data directory ${dataDir} must not be inside the example ${example} (it is copied)`);
    return { repo: join(dataDir, `${safeName(basename(example))}-work`), dataDir, exampleWork: { example, dir: join(dataDir, `${safeName(basename(example))}-work`) } };
  }
  const repo = await repositoryRoot(resolve(cwd, options.repo ?? '.'));
  const svcDir = await stat(join(repo, '.svc')).catch(() => null);
  if (svcDir === null || !svcDir.isDirectory()) {
    throw new InputError('SVC_ERR_DEV_NO_WORKFLOWS', `${repo} has no .svc/ directory: run \`svc init\` there first, or try the example with \`npm start\` (svc dev --example examples/quickstart --push)`);
  }
  return { repo, dataDir: resolve(cwd, explicitData ?? join(repo, DATA_DIR_NAME)), exampleWork: undefined };
}

async function compileInto(dir: string): Promise<void> {
  const { compileWorkflows } = await import('../compiler/compile.ts');
  await compileWorkflows({ repoRoot: dir, mode: 'write' });
}

/** Whether the committed lock matches the workflows (a stale lock runs old definitions). */
async function lockWarning(repo: string): Promise<string | undefined> {
  try {
    const { compileWorkflows } = await import('../compiler/compile.ts');
    const result = await compileWorkflows({ repoRoot: repo, mode: 'check' });
    if (result.drift.missing) return `${repo} has no .svc/svc.lock.json: run \`svc compile\` and commit it, or nothing will run`;
    if (!result.drift.upToDate) return '.svc/svc.lock.json is out of date with .svc/workflows: run `svc compile` and commit it before pushing';
  } catch (error) {
    return `the workflows do not compile (${messageOf(error)}); fix them, run \`svc compile\` and commit`;
  }
  return undefined;
}

function signals(stopSignal: Promise<unknown> | undefined): { requested: Promise<string>; dispose(): void } {
  let resolveSignal!: (signal: string) => void;
  const requested = new Promise<string>((r) => (resolveSignal = r));
  let seen = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (seen) {
      process.stderr.write(`svc dev: second ${signal}, exiting without a clean stop\n`);
      process.exit(1);
    }
    seen = true;
    resolveSignal(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  void stopSignal?.then(() => resolveSignal('stop'));
  return {
    requested,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

async function pushHead(repo: string, reporter: Reporter): Promise<void> {
  const branch = await currentBranch(repo);
  const sha = await headSha(repo);
  if (branch === null || sha === null) {
    reporter.emit({ event: 'note', message: 'not pushing: HEAD is not on a branch with a commit (check out a branch, then `git push svc HEAD`)' });
    return;
  }
  const pushed = await reporter.task('push', `pushing ${branch} to the ${DEV_REMOTE} remote`, () => tryGit(repo, ['push', '--porcelain', DEV_REMOTE, `HEAD:refs/heads/${branch}`]));
  const output = `${pushed.stdout}\n${pushed.stderr}`.trim();
  if (pushed.ok && /\[up to date\]/.test(pushed.stdout)) {
    reporter.emit({ event: 'note', message: `${branch} (${sha.slice(0, 8)}) is already on the ${DEV_REMOTE} remote; commit and \`git push ${DEV_REMOTE} HEAD\` to run again` });
    return;
  }
  reporter.emit({ event: 'push', ref: `refs/heads/${branch}`, sha, ok: pushed.ok, output });
}

/** Runs svc dev until SIGINT/SIGTERM (or `stopSignal`); resolves with the exit code. */
export async function runDev(options: DevOptions = {}): Promise<number> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const reporter = createReporter({ json: options.json === true, stdout, stderr });
  const stop = signals(options.stopSignal);
  let stack: DevStack | undefined;
  try {
    const port = checkPort(options.port, '--port');
    const relayPort = checkPort(options.relayPort, '--relay-port');
    const where = await layout(options, cwd, env);
    // An explicit port that is taken is refused before anything is created.
    for (const [value, flag] of [[port, '--port'], [relayPort, '--relay-port']] as const) {
      if (value !== undefined && value !== 0) await choosePort(value, value, flag);
    }
    const paths = devPaths(where.dataDir);
    await mkdir(where.dataDir, { recursive: true });
    await mkdir(dirname(paths.logFile), { recursive: true });
    const logStream = createWriteStream(paths.logFile, { flags: 'a' });
    const logger = createLogger({ level: 'info', name: 'svc-dev', destination: logStream });

    if (where.exampleWork !== undefined) {
      const { example, dir } = where.exampleWork;
      const copy = await reporter.task('example', `preparing ${basename(example)} in ${dir}`, () => ensureWorkCopy(example, dir, compileInto));
      if (copy.created) reporter.emit({ event: 'note', message: `copied ${example} to ${dir} (its own git repository; edit, commit and \`git push svc HEAD\` there)` });
    } else {
      const warning = await reporter.task('lock', 'checking .svc/svc.lock.json', () => lockWarning(where.repo));
      if (warning !== undefined) reporter.emit({ event: 'note', message: `warning: ${warning}` });
    }
    if (isInside(where.repo, where.dataDir) && where.exampleWork === undefined) await excludeFromGit(where.repo, where.dataDir);

    const name = safeName(basename(where.repo));
    const bare = join(paths.gitDir, `${name}.git`);
    const repository = `local/${name}`;
    const remoteUrl = `file://${bare}`;
    await ensureBareRepository(bare);
    const secret = await hookSecret(paths);

    stack = await startDevStack({
      paths,
      orchestratorPort: port,
      relayPort,
      logger,
      reporter,
      baseEnv: devBaseEnv(env),
      source: { repository, remoteUrl, repoKey: where.repo, secret: secret.secret },
    });
    const running = stack;
    stop.requested.then(() => undefined, () => undefined);

    await installPostReceiveHook({ repo: bare, webhookUrl: running.webhookUrl, secretFile: paths.hookSecretFile, sourceId: running.sourceId, repository, remoteUrl });
    await ensureRemote(where.repo, DEV_REMOTE, bare);
    await reporter.task('route', 'waiting for the relay to route the repository', () => running.waitForRoute(running.sourceId));

    const since = Date.now();
    reporter.emit({
      event: 'ready',
      repo: where.repo,
      dataDir: where.dataDir,
      relayUrl: running.relay.url,
      orchestratorUrl: running.orchestrator.url,
      issuer: running.issuer,
      webhookUrl: running.webhookUrl,
      remote: { name: DEV_REMOTE, url: bare },
      agentId: running.agent.agentId,
      labels: running.agentLabels,
      recentRuns: await recentRuns(running.orchDb.pool, DEV_ORG),
      logFile: paths.logFile,
      cliEnvFile: paths.cliEnvFile,
    });
    const watcher = watchRuns({
      pool: running.orchDb.pool,
      orgId: DEV_ORG,
      since,
      emit: (event) => reporter.emit(event),
      onError: (error) => logger.warn({ err: error }, 'run progress poll failed'),
    });
    if (options.push === true) {
      await Promise.race([pushHead(where.repo, reporter), stop.requested]);
    }

    const signal = await stop.requested;
    // The progress recorded up to the signal is flushed first, so that after `stopping` only
    // `stopped` (or `error`) follows: a reader can stop reading runs at `stopping`.
    await watcher.poll().catch(() => undefined);
    await watcher.stop();
    reporter.emit({ event: 'stopping', signal });
    stack = undefined;
    await running.stop();
    reporter.emit({ event: 'stopped' });
    await new Promise<void>((r) => logStream.end(r));
    return 0;
  } catch (error) {
    const code = isSvcError(error) ? error.code : 'SVC_ERR_DEV';
    reporter.emit({ event: 'error', code, message: messageOf(error) });
    await stack?.stop().catch(() => undefined);
    return isSvcError(error) && error.code === 'SVC_ERR_CLI_USAGE' ? 2 : 1;
  } finally {
    reporter.close();
    stop.dispose();
  }
}
