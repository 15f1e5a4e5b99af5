// Config layering: defaults → (optional stored shared config) → local YAML file named by
// SVC_CONFIG_FILE → SVC_* environment. Every value remembers the layer it came from so that a
// refusal names both the dot path and where the bad value was written.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { TSchema } from 'typebox';
import { parseDocument } from 'yaml';
import { SvcConfig } from '../../../schemas/config.ts';
import { compileSchema, type ValidationIssue } from '../../../schemas/validate.ts';
import { InputError, messageOf } from '../../../core/errors.ts';
import { configDefaults } from './defaults.ts';
import { CONFIG_ENV, closestEnvName, isNonConfigEnv } from './env.ts';
import { SENSITIVE_CONFIG_PATHS, getPath } from './redact.ts';
import { unsupportedFieldsOf } from './unsupported.ts';

const checkConfig = compileSchema(SvcConfig);

/** A config file larger than this is certainly a mistake (wrong file named). */
const MAX_CONFIG_FILE_BYTES = 1024 * 1024;

export interface LoadConfigOptions {
  /** Environment to read; defaults to `process.env`. Only `SVC_*` names are looked at. */
  env?: NodeJS.ProcessEnv;
  /** Directory a relative SVC_CONFIG_FILE is resolved against; defaults to `process.cwd()`. */
  cwd?: string;
  /**
   * A stored shared config document (a config version), applied above the defaults and below
   * the local file and environment, so local settings always win.
   */
  shared?: { version: number; config: unknown };
  /** Extra `SVC_*` names the calling program reads itself (not config, not refused). */
  nonConfigEnv?: readonly string[];
}

export interface ConfigIssue extends ValidationIssue {
  /** `defaults`, `shared config v<N>`, `file <path>` or `env SVC_X`. */
  layer: string;
}

export interface LoadedConfig {
  /** Effective config, deeply frozen. */
  config: SvcConfig;
  /** Dot path of every set leaf → the layer its value came from. */
  sources: Map<string, string>;
  /** Absolute path of the local file read, when SVC_CONFIG_FILE was set. */
  file?: string;
}

type Plain = Record<string, unknown>;

function isPlain(value: unknown): value is Plain {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Values below these paths are replaced whole, never merged key by key. */
function isAtomic(dotPath: string): boolean {
  // A plugin's slice, and one identity provider's entry: a layer replaces it whole.
  return /^plugins\.config\.[^.]+$/.test(dotPath) || /^relay\.sso\.providers\.[^.]+$/.test(dotPath);
}

function setOwn(target: Plain, key: string, value: unknown): void {
  // defineProperty, not assignment: a `__proto__` key from a file must stay a plain (refused) key.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function forgetBelow(sources: Map<string, string>, dotPath: string): void {
  const prefix = `${dotPath}.`;
  for (const key of sources.keys()) if (key.startsWith(prefix)) sources.delete(key);
}

/** Merge one layer into `target`, recording the layer of every value written. */
function applyLayer(target: Plain, layer: Plain, prefix: string, name: string, sources: Map<string, string>): void {
  for (const [key, value] of Object.entries(layer)) {
    const dotPath = prefix === '' ? key : `${prefix}.${key}`;
    if (isPlain(value) && !isAtomic(dotPath)) {
      // Own properties only: `target['__proto__']` would otherwise walk into Object.prototype.
      if (!Object.hasOwn(target, key) || !isPlain(target[key])) {
        setOwn(target, key, {});
        forgetBelow(sources, dotPath);
        sources.set(dotPath, name);
      }
      applyLayer(target[key] as Plain, value, dotPath, name, sources);
      continue;
    }
    setOwn(target, key, structuredClone(value));
    forgetBelow(sources, dotPath);
    sources.set(dotPath, name);
  }
}

function nest(dotPath: string, value: unknown): Plain {
  const parts = dotPath.split('.');
  let out: unknown = value;
  for (let i = parts.length - 1; i >= 0; i--) out = { [parts[i]!]: out };
  return out as Plain;
}

/** The schema of the field at a dot path, or undefined past the schema's edge. */
export function schemaAt(dotPath: string): TSchema | undefined {
  let schema: TSchema | undefined = SvcConfig;
  for (const part of dotPath.split('.')) {
    const properties: Record<string, TSchema> | undefined = (schema as { properties?: Record<string, TSchema> } | undefined)?.properties;
    if (properties && Object.hasOwn(properties, part)) {
      schema = properties[part];
      continue;
    }
    const patterns: Record<string, TSchema> | undefined = (schema as { patternProperties?: Record<string, TSchema> } | undefined)?.patternProperties;
    const match = patterns && Object.entries(patterns).find(([p]) => new RegExp(p).test(part));
    if (!match) return undefined;
    schema = match[1];
  }
  return schema;
}

type Coerced = { ok: true; value: unknown } | { ok: false; message: string };

/** Env values are strings; turn one into the type its field's schema wants. */
function coerceEnv(dotPath: string, raw: string): Coerced {
  const schema = schemaAt(dotPath) as { type?: string; enum?: unknown[] } | undefined;
  const shown = SENSITIVE_CONFIG_PATHS.includes(dotPath) ? '' : `, got ${JSON.stringify(raw.length > 40 ? `${raw.slice(0, 40)}…` : raw)}`;
  switch (schema?.type) {
    case 'integer':
    case 'number': {
      const text = raw.trim();
      if (!/^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(text)) return { ok: false, message: `must be a number${shown}` };
      return { ok: true, value: Number(text) };
    }
    case 'boolean': {
      const text = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(text)) return { ok: true, value: true };
      if (['false', '0', 'no', 'off'].includes(text)) return { ok: true, value: false };
      return { ok: false, message: `must be true or false${shown}` };
    }
    case 'array':
      return { ok: true, value: raw.split(',').map((s) => s.trim()).filter((s) => s !== '') };
    case 'object': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch (error) {
        return { ok: false, message: `must be a JSON object (${messageOf(error)})` };
      }
      if (!isPlain(parsed)) return { ok: false, message: 'must be a JSON object' };
      return { ok: true, value: parsed };
    }
    default:
      return { ok: true, value: raw };
  }
}

function layerOf(sources: Map<string, string>, dotPath: string): string {
  // The value itself, else the nearest ancestor that was written whole, else a descendant.
  for (let p = dotPath; p !== ''; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    const layer = sources.get(p);
    if (layer !== undefined) return layer;
  }
  const prefix = dotPath === '' ? '' : `${dotPath}.`;
  for (const [key, layer] of sources) if (key.startsWith(prefix)) return layer;
  return 'defaults';
}

function explain(issue: ValidationIssue): string {
  if (issue.message === 'unknown field' && /^plugins\.config\.[^.]+$/.test(issue.path)) {
    return 'plugin config keys look like <kind>:<id> (e.g. provider:github)';
  }
  if (issue.message === 'must be equal to one of the allowed values') {
    const allowed = (schemaAt(issue.path) as { enum?: unknown[] } | undefined)?.enum;
    if (allowed) return `must be one of ${allowed.join(', ')}`;
  }
  return issue.message;
}

export function formatConfigIssues(issues: readonly ConfigIssue[]): string {
  return issues
    .map((i) => `config${i.path === '' ? '' : ` ${i.path}`}: ${i.message} (from ${i.layer})`)
    .join('; ');
}

function refuse(issues: ConfigIssue[]): never {
  throw new InputError('SVC_ERR_CONFIG_INVALID', formatConfigIssues(issues), { details: { issues } });
}

async function readConfigFile(file: string): Promise<Plain> {
  const layer = `file ${file}`;
  let text: string;
  try {
    const bytes = await readFile(file);
    if (bytes.length > MAX_CONFIG_FILE_BYTES) {
      refuse([{ path: '', message: `file is larger than ${MAX_CONFIG_FILE_BYTES} bytes`, layer }]);
    }
    text = bytes.toString('utf8');
  } catch (error) {
    if (error instanceof InputError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EISDIR' ? 'is a directory' : messageOf(error);
    throw new InputError('SVC_ERR_CONFIG_FILE_UNREADABLE', `config file ${file} (named by SVC_CONFIG_FILE) ${why}`, {
      cause: error,
      details: { file },
    });
  }
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const syntax = doc.errors[0];
  if (syntax) {
    const at = syntax.linePos?.[0];
    const where = at ? `line ${at.line}, column ${at.col}` : 'unknown position';
    // prettyErrors appends the position and a code frame; keep only the reason.
    const first = (syntax.message.split('\n')[0] ?? syntax.message).replace(/ at line \d+, column \d+:$/, '');
    refuse([{ path: '', message: `YAML syntax error at ${where}: ${first}`, layer }]);
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    refuse([{ path: '', message: `YAML could not be read: ${messageOf(error)}`, layer }]);
  }
  if (value === null || value === undefined) return {};
  if (!isPlain(value)) refuse([{ path: '', message: 'the file must hold a mapping of settings', layer }]);
  return value;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * Build the effective config. Throws InputError SVC_ERR_CONFIG_INVALID naming path and layer, or
 * SVC_ERR_CONFIG_UNSUPPORTED for a field this version does not honour (unsupported.ts).
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const sources = new Map<string, string>();
  const merged: Plain = {};
  applyLayer(merged, configDefaults() as unknown as Plain, '', 'defaults', sources);

  if (options.shared !== undefined) {
    const layer = `shared config v${options.shared.version}`;
    if (!isPlain(options.shared.config)) refuse([{ path: '', message: 'must be an object', layer }]);
    applyLayer(merged, options.shared.config, '', layer, sources);
  }

  let file: string | undefined;
  const named = env['SVC_CONFIG_FILE'];
  if (named !== undefined && named !== '') {
    file = path.resolve(cwd, named);
    applyLayer(merged, await readConfigFile(file), '', `file ${file}`, sources);
  }

  const issues: ConfigIssue[] = [];
  for (const name of Object.keys(env).filter((n) => n.startsWith('SVC_')).sort()) {
    const raw = env[name];
    // An empty variable counts as unset (`SVC_X=` in compose files and shells).
    if (raw === undefined || raw === '' || isNonConfigEnv(name, options.nonConfigEnv)) continue;
    const layer = `env ${name}`;
    const dotPath = CONFIG_ENV[name];
    if (dotPath === undefined) {
      const guess = closestEnvName(name);
      issues.push({ path: '', message: `unknown setting ${name}${guess ? ` (did you mean ${guess}?)` : ''}`, layer });
      continue;
    }
    const coerced = coerceEnv(dotPath, raw);
    if (!coerced.ok) {
      issues.push({ path: dotPath, message: coerced.message, layer });
      continue;
    }
    applyLayer(merged, nest(dotPath, coerced.value), '', layer, sources);
  }

  const result = checkConfig.validate(merged);
  if (!result.ok) {
    for (const issue of result.issues) {
      // A bad env value that failed to coerce was never merged; don't report it twice.
      if (issues.some((i) => i.path !== '' && i.path === issue.path)) continue;
      issues.push({ path: issue.path, message: explain(issue), layer: layerOf(sources, issue.path) });
    }
  }
  if (issues.length > 0) refuse(issues);
  // A value the runtime would not honour is refused, never accepted and ignored (unsupported.ts).
  const unsupported = unsupportedFieldsOf(merged).map((u) => ({ ...u, layer: layerOf(sources, u.path) }));
  if (unsupported.length > 0) {
    throw new InputError('SVC_ERR_CONFIG_UNSUPPORTED', formatConfigIssues(unsupported), { details: { issues: unsupported } });
  }

  // Report leaves only: sections were tracked to attribute errors, not because they are values.
  const leaves = new Map([...sources].filter(([key]) => isAtomic(key) || !isPlain(getPath(merged, key))));
  const loaded: LoadedConfig = { config: deepFreeze(merged as unknown as SvcConfig), sources: leaves };
  if (file !== undefined) loaded.file = file;
  return loaded;
}
