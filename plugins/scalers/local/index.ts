// Scaler `local`: ephemeral `svc-agent` processes on the orchestrator's own host, for one-machine
// installs that want parallel jobs without static agents (docs/scalers.md). Each scale-up starts
// one child per agent: by default this package's svc-agent under the orchestrator's Node, or the
// operator's `command` template (an argument array, never a shell string). The agent's settings
// travel in its environment (agent/env.ts): id, labels = the request's mandatoryLabels,
// SVC_AGENT_EPHEMERAL=1, the orchestrator URL and the token from `agentTokenFile`. Nothing else
// of the orchestrator's environment is passed on: it holds the database URL and master key.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readdirSync, readFileSync, rmSync, statSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { Type } from 'typebox';
import { SvcError, messageOf } from '../../../core/errors.ts';
import { assertScaleUpRequest, type ScalerCapacity, type ScalerExtensionPoint, type ScaleUpRequest } from '../../../core/extension-points/scaler.ts';
import { definePlugin } from '../../../core/plugins/define-plugin.ts';

/** This package's agent program: bin/svc-agent.ts next to the sources, dist/bin/svc-agent.js when compiled. */
export const AGENT_ENTRY = fileURLToPath(new URL(`../../../bin/svc-agent${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url));

/** Environment names a child gets from the orchestrator's own environment (nothing secret). */
const PASSED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ'] as const;
/** Agent logs kept under <workRoot>/logs (the oldest go first). */
const KEPT_LOGS = 100;

export const LocalScalerConfig = Type.Object(
  {
    /** Where agents connect (the composition root fills in this orchestrator's address). */
    orchestratorUrl: Type.String({ pattern: '^(https?|wss?)://\\S+$' }),
    /** Agents' work dirs (<workRoot>/<agent id>, removed when the agent ends) and logs (<workRoot>/logs). */
    workRoot: Type.String({ minLength: 1 }),
    /**
     * The agent command as an argument array; `{agentId}`, `{labels}`, `{workDir}` and
     * `{orchestratorUrl}` are replaced in each argument. Default: Node + this package's svc-agent.
     */
    command: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    /** File holding the agent token (`svc-admin agent-token create`), read at each start; none with agentAuth none. */
    agentTokenFile: Type.Optional(Type.String({ minLength: 1 })),
    /** SVC_AGENT_SANDBOX of the agents. */
    sandbox: Type.Union([Type.Literal('process'), Type.Literal('container'), Type.Literal('firecracker')], { default: 'process' }),
    /** SVC_AGENT_LOG_LEVEL of the agents. */
    logLevel: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
    /** More environment for the agents (SVC_AGENT_BWRAP, SVC_AGENT_CONTAINER_RUNTIME, …). */
    env: Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), Type.String(), { default: {} }),
    /** Children at once over all scaler entries using this plugin (each entry has its own maxAgents too). */
    max: Type.Integer({ minimum: 1, maximum: 1000, default: 16 }),
    /** SIGTERM → SIGKILL wait when stopping an agent. */
    stopGraceMs: Type.Integer({ minimum: 0, maximum: 600_000, default: 10_000 }),
  },
  { additionalProperties: false },
);
type Config = {
  orchestratorUrl: string;
  workRoot: string;
  command?: string[];
  agentTokenFile?: string;
  sandbox: string;
  logLevel: string;
  env: Record<string, string>;
  max: number;
  stopGraceMs: number;
};

interface Child {
  id: string;
  process: ChildProcess;
  workDir: string;
  /** The agent printed its ready line (registered with the orchestrator). */
  ready: boolean;
  exited: Promise<void>;
}

function fill(arg: string, values: Record<string, string>): string {
  return arg.replace(/\{(agentId|labels|workDir|orchestratorUrl)\}/g, (_, key: string) => values[key] ?? '');
}

function pruneLogs(dir: string): void {
  const logs = readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .map((f) => ({ f, at: statSync(join(dir, f)).mtimeMs }))
    .sort((a, b) => a.at - b.at);
  for (const old of logs.slice(0, Math.max(0, logs.length - KEPT_LOGS))) rmSync(join(dir, old.f), { force: true });
}

class LocalScaler implements ScalerExtensionPoint {
  readonly #config: Config;
  readonly #logger: Logger;
  readonly #children = new Map<string, Child>();
  #closed = false;

  constructor(config: Config, logger: Logger) {
    this.#config = config;
    this.#logger = logger;
  }

  async scaleUp(request: ScaleUpRequest): Promise<{ agentIds: string[] }> {
    assertScaleUpRequest(request);
    const agentIds: string[] = [];
    while (!this.#closed && agentIds.length < request.count && this.#children.size < this.#config.max) {
      const child = this.#start(request);
      agentIds.push(child.id);
    }
    return { agentIds };
  }

  async scaleDown({ agentIds }: { agentIds: readonly string[] }): Promise<{ stopped: string[] }> {
    const stopped: string[] = [];
    await Promise.all(
      agentIds.map(async (id) => {
        if (await this.#stop(id)) stopped.push(id);
      }),
    );
    return { stopped: agentIds.filter((id) => stopped.includes(id)) };
  }

  async capacity(): Promise<ScalerCapacity> {
    const children = [...this.#children.values()];
    return { current: children.length, pending: children.filter((c) => !c.ready).length, max: this.#config.max };
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#children.keys()].map((id) => this.#stop(id)));
  }

  #token(): string | undefined {
    const file = this.#config.agentTokenFile;
    if (file === undefined) return undefined;
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new SvcError('SVC_ERR_SCALER_SPAWN', `local scaler could not start an agent: agentTokenFile ${file} cannot be read (${messageOf(error)})`);
    }
  }

  #start(request: ScaleUpRequest): Child {
    const id = `local-${randomBytes(6).toString('hex')}`;
    const workDir = join(this.#config.workRoot, id);
    const logDir = join(this.#config.workRoot, 'logs');
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
    mkdirSync(logDir, { recursive: true, mode: 0o700 });
    pruneLogs(logDir);
    const labels = request.mandatoryLabels.join(',');
    const token = this.#token();
    const env: NodeJS.ProcessEnv = {};
    for (const name of PASSED_ENV) if (process.env[name] !== undefined) env[name] = process.env[name];
    Object.assign(env, this.#config.env, {
      SVC_ORCHESTRATOR_URL: this.#config.orchestratorUrl,
      SVC_AGENT_ID: id,
      SVC_AGENT_LABELS: labels,
      SVC_AGENT_EPHEMERAL: '1',
      SVC_AGENT_SANDBOX: this.#config.sandbox,
      SVC_AGENT_WORK_DIR: workDir,
      SVC_AGENT_LOG_LEVEL: this.#config.logLevel,
      ...(token === undefined ? {} : { SVC_AGENT_TOKEN: token }),
    });
    const values = { agentId: id, labels, workDir, orchestratorUrl: this.#config.orchestratorUrl };
    const [program, ...args] = (this.#config.command ?? [process.execPath, AGENT_ENTRY]).map((a) => fill(a, values)) as [string, ...string[]];
    const log = createWriteStream(join(logDir, `${id}.log`), { flags: 'a', mode: 0o600 });
    const proc = spawn(program, args, { env, cwd: workDir, stdio: ['ignore', 'pipe', 'pipe'] });
    const child: Child = { id, process: proc, workDir, ready: false, exited: Promise.resolve() };
    child.exited = this.#watch(child, log);
    this.#children.set(id, child);
    this.#logger.info({ agent: id, labels: request.mandatoryLabels, pid: proc.pid, reason: request.reason }, 'local scaler started an agent');
    return child;
  }

  /** Tees the child's output to its log, notes its ready line, forgets it when it exits. */
  #watch(child: Child, log: WriteStream): Promise<void> {
    const proc = child.process;
    proc.stdout?.on('data', (chunk: Buffer) => {
      log.write(chunk);
      if (!child.ready && chunk.toString('utf8').includes('svc-agent ready')) child.ready = true;
    });
    proc.stderr?.on('data', (chunk: Buffer) => log.write(chunk));
    return new Promise<void>((resolve) => {
      proc.on('error', (error) => {
        this.#logger.error({ err: messageOf(error), agent: child.id }, 'local scaler could not run the agent command');
        finish();
      });
      proc.on('exit', (code, signal) => {
        this.#logger.info({ agent: child.id, code, signal }, 'local scaler agent exited');
        finish();
      });
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        if (this.#children.get(child.id) === child) this.#children.delete(child.id);
        log.end();
        rmSync(child.workDir, { recursive: true, force: true });
        resolve();
      };
    });
  }

  async #stop(id: string): Promise<boolean> {
    const child = this.#children.get(id);
    if (child === undefined) return false;
    this.#children.delete(id);
    const proc = child.process;
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), this.#config.stopGraceMs);
      await child.exited;
      clearTimeout(timer);
    } else {
      await child.exited;
    }
    return true;
  }
}

export const localScaler = definePlugin({
  id: 'local',
  kind: 'scaler',
  version: '0.1.0',
  kernelRange: '^0.9.0',
  description: 'Ephemeral svc-agent processes on the orchestrator host',
  configSchema: LocalScalerConfig,
  create({ config, logger }): ScalerExtensionPoint {
    return new LocalScaler(config as Config, logger);
  },
});

export default localScaler;
