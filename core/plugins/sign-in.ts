// Sign-in: the kernel's checklist before a plugin may serve. Each phase either passes or throws
// PluginSignInError naming the plugin and the phase; nothing is registered unless all pass.
import { stat } from 'node:fs/promises';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import semver from 'semver';
import type { TSchema } from 'typebox';
import { Value } from 'typebox/value';
import { PLUGIN_KINDS, PluginManifestByKind, type PluginKind, type PluginManifest } from '../../schemas/plugin.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';
import { InputError, messageOf } from '../errors.ts';
import { isPlugin, type PluginContext, type SvcPlugin } from './define-plugin.ts';
import { PluginSignInError, type PluginLabel, type SignInPhase } from './errors.ts';
import { extensionPoints, type ExtensionPointFor } from '../extension-points/index.ts';
import type { PluginRegistry, RegisteredPlugin } from './registry.ts';

export const DEFAULT_CREATE_TIMEOUT_MS = 10_000;

export interface PhaseReport {
  phase: SignInPhase;
  status: 'passed' | 'failed' | 'skipped';
  durationMs: number;
  /** Why it failed or was skipped. */
  message?: string;
}

export interface SignInEnvironment {
  kernelVersion: string;
  /** Module paths are resolved against this directory. */
  baseDir: string;
  /** Config slices keyed `<kind>:<id>`. */
  configs: Readonly<Record<string, unknown>>;
  createTimeoutMs: number;
  logger: Logger;
  metrics: Registry;
  registry: PluginRegistry;
  /** Host-wide abort (close): aborts every plugin's `ctx.signal`. */
  signal?: AbortSignal;
  /** `verify` runs without the other plugins: dependencies are reported, not checked. */
  skipDependencies?: boolean;
  onPhase?(report: PhaseReport): void;
}

/** A built-in plugin object, or a module path named in config. */
export type SignInSubject = SvcPlugin | string;

class PhaseFailure extends Error {
  readonly reason: string;
  readonly original: unknown;
  constructor(reason: string, original?: unknown) {
    super(reason);
    this.reason = reason;
    this.original = original;
  }
}

/** Run every phase for one plugin; on success the plugin is in `env.registry`. */
export async function signInPlugin(subject: SignInSubject, env: SignInEnvironment): Promise<RegisteredPlugin> {
  const label: PluginLabel = { name: typeof subject === 'string' ? subject : labelOfObject(subject) };
  let release: (() => void) | null = null;
  let current: SignInPhase = 'resolve';

  const phase = async <T>(name: SignInPhase, run: () => T | Promise<T>): Promise<T> => {
    current = name;
    const started = performance.now();
    try {
      const value = await run();
      env.onPhase?.({ phase: name, status: 'passed', durationMs: performance.now() - started });
      return value;
    } catch (error) {
      const reason = error instanceof PhaseFailure ? error.reason : messageOf(error);
      env.onPhase?.({ phase: name, status: 'failed', durationMs: performance.now() - started, message: reason });
      throw new PluginSignInError(label, name, reason, error instanceof PhaseFailure ? error.original : error);
    }
  };

  try {
    let modulePath: string | undefined;
    let exported: Record<string, unknown>;
    if (typeof subject === 'string') {
      const resolved = await phase('resolve', async () => {
        const path = await resolveModulePath(subject, env.baseDir);
        label.modulePath = path;
        return { path, exports: await importModule(path) };
      });
      modulePath = resolved.path;
      exported = resolved.exports;
    } else {
      env.onPhase?.({ phase: 'resolve', status: 'skipped', durationMs: 0, message: 'built-in plugin' });
      exported = { default: subject };
    }

    const plugin = await phase('export', () => checkExport(exported));
    if (typeof subject === 'string' && typeof plugin.id === 'string' && plugin.id !== '') label.name = plugin.id;

    const manifest = await phase('manifest', () => checkManifest(plugin));
    label.name = manifest.id;
    label.kind = manifest.kind;

    await phase('unique', () => {
      release = env.registry.claim(manifest.kind, manifest.id);
      if (release === null) {
        throw new PhaseFailure(`a ${manifest.kind} plugin with id "${manifest.id}" is already signed in`);
      }
    });

    await phase('kernel-range', () => {
      if (!semver.satisfies(env.kernelVersion, manifest.kernelRange, { includePrerelease: true })) {
        throw new PhaseFailure(`kernel ${env.kernelVersion} does not satisfy the plugin's kernelRange "${manifest.kernelRange}"`);
      }
    });

    const dependencies = manifest.dependencies ?? [];
    if (env.skipDependencies === true) {
      env.onPhase?.({
        phase: 'dependencies',
        status: 'skipped',
        durationMs: 0,
        message:
          dependencies.length === 0
            ? 'none declared'
            : `checked at start: needs ${dependencies.map((d) => (d.id === undefined ? d.kind : `${d.kind}:${d.id}`)).join(', ')}`,
      });
    } else {
      await phase('dependencies', () => {
        const missing = dependencies.filter((d) =>
          d.id === undefined ? env.registry.ofKind(d.kind).length === 0 : !env.registry.has(d.kind, d.id),
        );
        if (missing.length > 0) {
          const names = missing.map((d) => (d.id === undefined ? `any ${d.kind} plugin` : `${d.kind}:${d.id}`));
          throw new PhaseFailure(`needs ${names.join(', ')} signed in before it`);
        }
      });
    }

    const config = await phase('config', () => checkConfig(plugin.configSchema, env.configs[`${manifest.kind}:${manifest.id}`]));

    const controller = new AbortController();
    const onHostAbort = (): void => controller.abort(env.signal?.reason);
    env.signal?.addEventListener('abort', onHostAbort, { once: true });

    const context: PluginContext = {
      config,
      logger: env.logger.child({ plugin: manifest.id }),
      metrics: env.metrics,
      kernelVersion: env.kernelVersion,
      signal: controller.signal,
      dependency<K extends PluginKind>(kind: K, id?: string): ExtensionPointFor<K> {
        const declared = dependencies.some((d) => d.kind === kind && (d.id === undefined || id === undefined || d.id === id));
        if (!declared) {
          throw new InputError(
            'SVC_ERR_PLUGIN_UNDECLARED_DEPENDENCY',
            `plugin "${manifest.id}" asked for ${id === undefined ? kind : `${kind}:${id}`} without declaring it in dependencies`,
          );
        }
        return (id === undefined ? env.registry.only(kind) : env.registry.get(kind, id)).instance;
      },
    };

    const instance = await phase('create', () => createWithin(plugin, context, controller, env.createTimeoutMs));

    await phase('shape', async () => {
      const problems = shapeProblems(manifest.kind, instance);
      if (problems !== null) {
        await closeQuietly(instance, env.logger);
        throw new PhaseFailure(problems);
      }
    });

    const entry: RegisteredPlugin = {
      manifest,
      instance: instance as ExtensionPointFor<PluginKind>,
      config,
      modulePath,
      controller,
    };
    env.registry.add(entry);
    release = null;
    return entry;
  } catch (error) {
    // Fail closed: whatever was reserved for this plugin is given back; nothing is registered.
    (release as (() => void) | null)?.();
    if (error instanceof PluginSignInError) throw error;
    throw new PluginSignInError(label, current, messageOf(error), error);
  }
}

function labelOfObject(value: unknown): string {
  const id = (value as { id?: unknown } | null)?.id;
  return typeof id === 'string' && id !== '' ? id : '<unnamed>';
}

async function resolveModulePath(spec: string, baseDir: string): Promise<string> {
  if (spec.trim() === '') throw new PhaseFailure('module path is empty');
  // Paths only: a plugin is loaded from the file config names, never looked up in node_modules.
  const path = spec.startsWith('file:') ? fileURLToPath(spec) : isAbsolute(spec) ? spec : resolvePath(baseDir, spec);
  let info;
  try {
    info = await stat(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new PhaseFailure(code === 'ENOENT' ? `module not found at ${path}` : `module at ${path} is unreadable: ${messageOf(error)}`, error);
  }
  if (!info.isFile()) throw new PhaseFailure(`module path ${path} is not a file`);
  return path;
}

async function importModule(path: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    throw new PhaseFailure(`module ${path} could not be imported: ${messageOf(error)}`, error);
  }
}

function checkExport(exported: Record<string, unknown>): SvcPlugin {
  if (!('default' in exported) || exported.default === undefined) {
    throw new PhaseFailure('the module has no default export (export default definePlugin({...}))');
  }
  const candidate = exported.default;
  if (!isPlugin(candidate)) {
    throw new PhaseFailure('the default export is not a plugin: make it with definePlugin() (brand Symbol.for("svc.plugin") missing)');
  }
  return candidate;
}

function checkManifest(plugin: SvcPlugin): PluginManifest {
  const raw: Record<string, unknown> = {
    id: plugin.id,
    kind: plugin.kind,
    version: plugin.version,
    kernelRange: plugin.kernelRange,
    description: plugin.description,
  };
  if (plugin.dependencies !== undefined) raw['dependencies'] = plugin.dependencies;
  if (typeof raw['kind'] !== 'string' || !(PLUGIN_KINDS as readonly string[]).includes(raw['kind'])) {
    throw new PhaseFailure(`kind: must be one of ${PLUGIN_KINDS.join(', ')}`);
  }
  const check = manifestChecks[raw['kind'] as PluginKind];
  const result = check.validate(raw);
  if (!result.ok) {
    // Patterns are for machines; say what the field should look like instead.
    const readable = result.issues.map((issue) =>
      issue.message.startsWith('must match pattern')
        ? { ...issue, message: MANIFEST_HINTS[issue.path.replace(/^dependencies\.\d+\./, 'dependencies.')] ?? issue.message }
        : issue,
    );
    throw new PhaseFailure(formatIssues(readable));
  }
  const manifest = result.value as PluginManifest;
  if (semver.validRange(manifest.kernelRange) === null) {
    throw new PhaseFailure(`kernelRange: "${manifest.kernelRange}" is not a semver range`);
  }
  if (typeof plugin.configSchema !== 'object' || plugin.configSchema === null) {
    throw new PhaseFailure('configSchema: must be a TypeBox schema');
  }
  if (typeof plugin.create !== 'function') throw new PhaseFailure('create: must be a function');
  return manifest;
}

const MANIFEST_HINTS: Record<string, string> = {
  id: 'must be kebab-case, lower-case letters and digits (e.g. "aws-kms")',
  version: 'must be a semver version (e.g. "1.2.3")',
  'dependencies.id': 'must be kebab-case',
};

const manifestChecks = Object.fromEntries(
  PLUGIN_KINDS.map((kind) => [kind, compileSchema(PluginManifestByKind[kind])]),
) as { [K in PluginKind]: ReturnType<typeof compileSchema<(typeof PluginManifestByKind)[K]>> };

function checkConfig(schema: TSchema, slice: unknown): unknown {
  let check;
  try {
    check = compileSchema(schema);
  } catch (error) {
    throw new PhaseFailure(`configSchema does not compile: ${messageOf(error)}`, error);
  }
  // Defaults are applied to a copy: the caller's config object is never changed.
  const value = Value.Default(schema, structuredClone(slice === undefined ? {} : slice));
  const result = check.validate(value);
  if (!result.ok) throw new PhaseFailure(formatIssues(result.issues));
  return deepFreeze(result.value);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

async function createWithin(plugin: SvcPlugin, context: PluginContext, controller: AbortController, timeoutMs: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const created = (async () => plugin.create(context))();
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([created, timedOut]);
    if (outcome === 'timeout') {
      controller.abort(new Error('plugin create timed out'));
      // If it resolves later, release what it made: it will never serve.
      created.then((late) => closeQuietly(late, context.logger), () => undefined);
      throw new PhaseFailure(`create did not resolve within ${timeoutMs} ms`);
    }
    return outcome;
  } catch (error) {
    if (error instanceof PhaseFailure) throw error;
    throw new PhaseFailure(`create threw: ${messageOf(error)}`, error);
  } finally {
    clearTimeout(timer);
  }
}

function shapeProblems(kind: PluginKind, instance: unknown): string | null {
  if (typeof instance !== 'object' || instance === null) {
    return `create resolved to ${instance === null ? 'null' : typeof instance}, expected a ${kind} implementation object`;
  }
  const members = extensionPoints[kind].members as Record<string, string | undefined>;
  const wrong: string[] = [];
  for (const [name, type] of Object.entries(members)) {
    if (type === undefined) continue;
    const actual = (instance as Record<string, unknown>)[name];
    const ok = type === 'object' ? typeof actual === 'object' && actual !== null : typeof actual === type;
    if (!ok) wrong.push(`${name} (${type}${actual === undefined ? ', missing' : `, got ${typeof actual}`})`);
  }
  return wrong.length === 0 ? null : `the ${kind} implementation lacks required members: ${wrong.join(', ')}`;
}

export async function closeQuietly(instance: unknown, logger: Logger): Promise<void> {
  const close = (instance as { close?: unknown } | null)?.close;
  if (typeof close !== 'function') return;
  try {
    await close.call(instance);
  } catch (error) {
    logger.warn({ err: error }, 'closing a plugin instance that never served failed');
  }
}
