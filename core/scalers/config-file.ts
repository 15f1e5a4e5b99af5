// Reads the scaler config (schemas/scaler.ts) from `scaler.configPath` and/or `scaler.configDir`.
// Both the composition root (which signs the scaler plugins in with their `plugins.<id>`
// settings) and the orchestrator's scaling subsystem (entries, limits, reload) read it through
// here, so a file means the same thing to both. Any problem is one InputError line naming the
// file and the field.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { arch as hostArch, platform as hostPlatform } from 'node:os';
import { extname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SCALER_DEFAULTS, ScalerFile, type ScalerEntry } from '../../schemas/scaler.ts';
import { compileSchema, formatIssues } from '../../schemas/validate.ts';
import { InputError, messageOf } from '../errors.ts';

/** An entry with its defaults applied and the label set its agents will register with. */
export interface ResolvedScaler {
  name: string;
  plugin: string;
  /** Custom labels: what the scaler is asked to give its agents (`mandatoryLabels`). */
  labels: string[];
  maxAgents: number;
  startsPerMinute: number;
  idleTimeoutMs: number;
  /** Auto labels (os, arch, ephemeral role, sandboxes) plus `labels`: what `runsOn` is matched against. */
  gate: string[];
  /** The file it came from. */
  file: string;
}

export interface ScalerConfig {
  scalers: ResolvedScaler[];
  /** `plugins.<id>` settings, merged over all files (one file per plugin id). */
  plugins: Record<string, Record<string, unknown>>;
  files: string[];
}

export interface ScalerConfigPaths {
  configPath?: string | undefined;
  configDir?: string | undefined;
}

const check = compileSchema(ScalerFile);
const EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
const clean = (value: string): string => value.trim().toLowerCase().replace(/[^a-z0-9._-]+/g, '-');

function invalid(file: string, what: string): never {
  throw new InputError('SVC_ERR_SCALER_CONFIG_INVALID', `scaler config ${file}: ${what}`, { details: { file } });
}

function filesOf(paths: ScalerConfigPaths, baseDir: string): string[] {
  const files: string[] = [];
  if (paths.configPath !== undefined) files.push(resolve(baseDir, paths.configPath));
  if (paths.configDir !== undefined) {
    const dir = resolve(baseDir, paths.configDir);
    let names: string[];
    try {
      if (!statSync(dir).isDirectory()) invalid(dir, 'scaler.configDir is not a directory');
      names = readdirSync(dir);
    } catch (error) {
      if (error instanceof InputError) throw error;
      invalid(dir, `scaler.configDir cannot be read (${messageOf(error)})`);
    }
    // Sorted: the first file to name a plugin's settings wins nothing by accident (duplicates are refused).
    for (const name of names.sort()) if (EXTENSIONS.has(extname(name))) files.push(join(dir, name));
  }
  return files;
}

function readOne(file: string): ScalerFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    invalid(file, `cannot be read (${messageOf(error)})`);
  }
  let value: unknown;
  try {
    value = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    invalid(file, `is not valid ${extname(file) === '.json' ? 'JSON' : 'YAML'} (${messageOf(error).split('\n')[0]})`);
  }
  const result = check.validate(value ?? {});
  if (!result.ok) invalid(file, formatIssues(result.issues));
  return result.value;
}

function resolveEntry(entry: ScalerEntry, file: string, index: number): ResolvedScaler {
  for (const label of entry.labels) {
    if (label.toLowerCase().startsWith('svc:')) invalid(file, `scalers.${index}.labels: "${label}" is in the reserved "svc:" namespace (set os, arch or sandboxes instead)`);
  }
  const labels = [...new Set(entry.labels)];
  const sandboxes = entry.sandboxes ?? SCALER_DEFAULTS.sandboxes;
  const gate = [
    `svc:os:${clean(entry.os ?? hostPlatform())}`,
    `svc:arch:${clean(entry.arch ?? hostArch())}`,
    'svc:role:ephemeral',
    ...sandboxes.map((s) => `svc:sandbox:${clean(s)}`),
    ...labels,
  ];
  return {
    name: entry.name,
    plugin: entry.plugin,
    labels,
    maxAgents: entry.maxAgents ?? SCALER_DEFAULTS.maxAgents,
    startsPerMinute: entry.startsPerMinute ?? SCALER_DEFAULTS.startsPerMinute,
    idleTimeoutMs: entry.idleTimeoutMs ?? SCALER_DEFAULTS.idleTimeoutMs,
    gate: [...new Set(gate)],
    file,
  };
}

/**
 * The scaler config, or undefined when neither path is set. Throws InputError
 * (`SVC_ERR_SCALER_CONFIG_INVALID`) naming the file and the field for any problem.
 */
export function loadScalerConfig(paths: ScalerConfigPaths, baseDir: string = process.cwd()): ScalerConfig | undefined {
  if (paths.configPath === undefined && paths.configDir === undefined) return undefined;
  const files = filesOf(paths, baseDir);
  const scalers: ResolvedScaler[] = [];
  const plugins: Record<string, Record<string, unknown>> = {};
  const pluginFile = new Map<string, string>();
  for (const file of files) {
    const parsed = readOne(file);
    parsed.scalers.forEach((entry, index) => {
      const twin = scalers.find((s) => s.name === entry.name);
      if (twin !== undefined) invalid(file, `scalers.${index}.name: "${entry.name}" is already used in ${twin.file}; names must be unique`);
      scalers.push(resolveEntry(entry, file, index));
    });
    for (const [id, settings] of Object.entries(parsed.plugins ?? {})) {
      const other = pluginFile.get(id);
      if (other !== undefined) invalid(file, `plugins.${id}: the settings of plugin "${id}" are already given in ${other}; keep them in one file`);
      pluginFile.set(id, file);
      plugins[id] = settings as Record<string, unknown>;
    }
  }
  return { scalers, plugins, files };
}
