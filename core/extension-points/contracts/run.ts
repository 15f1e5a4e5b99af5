// The contract runner: sign the plugin in through the kernel's own sign-in (fresh host per
// point), run each point within a time limit, release what the point held, and report. A
// failure message always names the kind, the plugin id and the point.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino, type Logger } from 'pino';
import type { PluginKind } from '../../../schemas/plugin.ts';
import { SvcError, messageOf } from '../../errors.ts';
import { isPlugin, type SvcPlugin } from '../../plugins/define-plugin.ts';
import { PluginHost } from '../../plugins/host.ts';
import type { ExtensionPointFor } from '../index.ts';
import { ContractSkip } from './check.ts';
import type {
  BaseHarness,
  ContractContext,
  ContractPointResult,
  ContractReport,
  ContractScope,
  ContractSubject,
  ContractSuite,
  RunContractOptions,
} from './types.ts';

export const DEFAULT_POINT_TIMEOUT_MS = 120_000;
export const SIGN_IN_POINT = 'sign-in: passes every kernel sign-in phase';

/** A plugin broke one or more contract points; `message` lists them all. */
export class ContractError extends SvcError {
  readonly report: ContractReport;
  constructor(report: ContractReport) {
    const failed = report.results.filter((r) => r.status === 'failed');
    super('SVC_ERR_PLUGIN_CONTRACT', failed.map((r) => r.message).join('\n'), {
      details: { kind: report.kind, plugin: report.id, points: failed.map((r) => r.point) },
    });
    this.report = report;
  }
}

export function contractFailureMessage(kind: PluginKind, id: string, point: string, reason: string): string {
  return `${kind} "${id}" fails contract point "${point}": ${reason}`;
}

/** Run every point of `suite` against `subject`; never throws for a failing point. */
export async function runSuite<K extends PluginKind, H extends BaseHarness<K>>(
  suite: ContractSuite<K, H>,
  subject: ContractSubject,
  harness: H,
  options: RunContractOptions = {},
): Promise<ContractReport> {
  const kind = suite.kind;
  const logger = harness.logger ?? pino({ level: 'silent' });
  const report: ContractReport = { kind, id: typeof subject === 'string' ? subject : String(subject.id), ok: true, results: [] };
  const record = async (result: ContractPointResult): Promise<void> => {
    if (result.status === 'failed') report.ok = false;
    report.results.push(result);
    await options.onResult?.(result);
  };
  const wanted = (point: string): boolean => options.only === undefined || options.only.includes(point);

  const loaded = await loadSubject(subject, harness.baseDir);
  if (typeof loaded !== 'string') report.id = loaded.id;
  // The sign-in point is the gate: with no signed-in instance no other point can say anything.
  const gate = await runPoint(kind, report.id, SIGN_IN_POINT, harness, logger, async (scope) => {
    if (typeof loaded === 'string') throw new Error(loaded);
    if (loaded.kind !== kind) throw new Error(`it is a ${String(loaded.kind)} plugin, not a ${kind} plugin`);
    await signedIn(kind, loaded, subject, harness, scope, logger);
  });
  if (wanted(SIGN_IN_POINT)) await record(gate);

  for (const point of suite.points) {
    if (!wanted(point.point)) continue;
    const skipReason = harness.skip?.[point.point];
    if (gate.status === 'failed' || skipReason !== undefined) {
      await record({ point: point.point, status: 'skipped', message: skipReason ?? 'sign-in failed' });
      continue;
    }
    const plugin = loaded as SvcPlugin;
    await record(
      await runPoint(kind, report.id, point.point, harness, logger, async (scope) => {
        const instance = await signedIn(kind, plugin, subject, harness, scope, logger);
        const ctx: ContractContext<K, H> = {
          kind,
          id: report.id,
          instance,
          harness,
          scope,
          signIn: (config) => signInWith(kind, plugin, subject, config, harness, scope, logger),
        };
        await point.run(ctx);
      }),
    );
  }
  return report;
}

/** The plugin object behind a subject, or why it cannot be had (sign-in names the same failure). */
async function loadSubject(subject: ContractSubject, baseDir: string | undefined): Promise<SvcPlugin | string> {
  if (typeof subject !== 'string') return isPlugin(subject) ? subject : 'the object is not a plugin made by definePlugin() (brand Symbol.for("svc.plugin") missing)';
  const path = isAbsolute(subject) ? subject : resolvePath(baseDir ?? process.cwd(), subject);
  try {
    const exported = (await import(pathToFileURL(path).href)) as { default?: unknown };
    return isPlugin(exported.default) ? exported.default : `module ${path} does not default-export a plugin made by definePlugin()`;
  } catch (error) {
    return `module ${path} could not be imported: ${messageOf(error)}`;
  }
}

async function signedIn<K extends PluginKind, H extends BaseHarness<K>>(
  kind: K,
  plugin: SvcPlugin,
  subject: ContractSubject,
  harness: H,
  scope: ContractScope,
  logger: Logger,
): Promise<ExtensionPointFor<K>> {
  const config = harness.config === undefined ? undefined : await harness.config(scope);
  const instance = await signInWith(kind, plugin, subject, config, harness, scope, logger);
  await harness.prepare?.(instance, scope);
  return instance;
}

async function signInWith<K extends PluginKind>(
  kind: K,
  plugin: SvcPlugin,
  subject: ContractSubject,
  config: unknown,
  harness: BaseHarness<K>,
  scope: ContractScope,
  logger: Logger,
): Promise<ExtensionPointFor<K>> {
  const host = new PluginHost({
    config: config === undefined ? {} : { [`${kind}:${plugin.id}`]: config },
    logger,
    ...(harness.baseDir === undefined ? {} : { baseDir: harness.baseDir }),
    ...(harness.createTimeoutMs === undefined ? {} : { createTimeoutMs: harness.createTimeoutMs }),
  });
  scope.teardown(() => host.close());
  // A module path goes through the resolve and export phases too, as it would from config.
  await host.signIn(typeof subject === 'string' ? subject : plugin);
  return host.get(kind, plugin.id);
}

async function runPoint(
  kind: PluginKind,
  id: string,
  point: string,
  harness: BaseHarness<PluginKind>,
  logger: Logger,
  body: (scope: ContractScope) => Promise<void>,
): Promise<ContractPointResult> {
  const timeoutMs = harness.pointTimeoutMs ?? DEFAULT_POINT_TIMEOUT_MS;
  const controller = new AbortController();
  const teardowns: Array<() => unknown> = [];
  const scope: ContractScope = {
    teardown: (fn) => void teardowns.push(fn),
    tempDir: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'svc-contract-'));
      teardowns.push(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
    signal: controller.signal,
    logger: logger.child({ contractPoint: point }),
  };
  let timer: NodeJS.Timeout | undefined;
  let failure: unknown;
  try {
    await Promise.race([
      body(scope),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort(new Error('contract point timed out'));
          reject(new Error(`did not finish within ${timeoutMs} ms`));
        }, timeoutMs);
      }),
    ]);
  } catch (error) {
    failure = error;
  } finally {
    clearTimeout(timer);
  }
  for (const fn of teardowns.reverse()) {
    try {
      await fn();
    } catch (error) {
      failure ??= new Error(`releasing what the point held failed: ${messageOf(error)}`, { cause: error });
    }
  }
  if (failure === undefined) return { point, status: 'passed' };
  if (failure instanceof ContractSkip) return { point, status: 'skipped', message: failure.message };
  return { point, status: 'failed', message: contractFailureMessage(kind, id, point, messageOf(failure)), error: failure };
}
