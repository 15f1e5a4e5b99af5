// Which config fields a shared config version may hold, and what a reload does with each field
// that changed (docs/config.md). The spec splits fields into local (one node: database, identity,
// listener) and shared (the whole cluster); sections the spec does not name are placed by the
// same rule: a value that must be the same on every node is shared, anything naming this node's
// files, ports or process is local. Secrets a version has no business holding (secrets.keyOld,
// orchestrator.kms.secretAccessKey) are local too, though a version would seal them.
import { InputError } from '../../../core/errors.ts';
import { getPath } from '../../services/config/index.ts';

/** Dot paths (a section covers everything under it) a config version may set. */
export const SHARED_CONFIG_PATHS: readonly string[] = Object.freeze([
  'platform.url',
  'platform.token',
  'storage',
  'agentAuth',
  'agentTokenTtlMs',
  'queue',
  'lockfileCache',
  'staleDetector',
  'secrets.key',
  'secrets.keyFile',
  'secrets.bootstrapAdminToken',
  'pgCustomerSecrets',
  'cluster',
  'events',
  'reconcile',
  'ingestRetry',
  'eventLog',
  'forgeStatus',
  'cache',
  'artifacts',
  'audit',
  'agent',
  'sealedSecretsRetryBackoffMs',
]);

/** spec: a reload holds these at their start values, with a warning. */
export const HELD_CONFIG_PATHS: readonly string[] = Object.freeze(['database.url', 'server.port', 'instance.id', 'storage']);

/**
 * Read once when the node starts (captured by a subsystem, a route registration or the master
 * key): a reload keeps the running value and warns "needs restart". Keeping it, rather than
 * swapping in a value half the code would not see, keeps every reader on one config.
 */
export const RESTART_CONFIG_PATHS: readonly string[] = Object.freeze([
  'platform',
  'secrets',
  'cluster',
  'events',
  'reconcile',
  'eventLog',
  'forgeStatus',
  'cache',
  'artifacts',
  'audit',
  'agent',
  'lockfileCache',
  'dataDir',
  'server.host',
  'server.publicUrl',
  'server.basePath',
  'scaler',
  'instance.mode',
  'metrics',
  'orchestrator',
  'relay',
  'plugins',
]);

/**
 * Seeded once into the `cluster_settings` row (cluster/settings.ts), which wins afterwards: a
 * reload keeps the running value and says where to change it.
 */
export const CLUSTER_SETTING_CONFIG_PATHS: readonly string[] = Object.freeze(['cluster.maxDispatchAttempts', 'sealedSecretsRetryBackoffMs']);

/** True when `path` is `prefix` or below it. */
export function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}.`);
}

function firstMatch(path: string, prefixes: readonly string[]): string | undefined {
  return prefixes.find((prefix) => isUnder(path, prefix));
}

export function heldPrefix(path: string): string | undefined {
  return firstMatch(path, HELD_CONFIG_PATHS);
}

export function clusterSettingPrefix(path: string): string | undefined {
  return firstMatch(path, CLUSTER_SETTING_CONFIG_PATHS);
}

export function restartPrefix(path: string): string | undefined {
  return firstMatch(path, RESTART_CONFIG_PATHS);
}

type Tree = Record<string, unknown>;

function isTree(value: unknown): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Dot paths of every leaf of a document (arrays and scalars are leaves; an empty section has
 * none, so `database: {}` against `database: { url }` differs at `database.url` only).
 */
export function leafPaths(tree: unknown, prefix = ''): string[] {
  if (!isTree(tree)) return prefix === '' ? [] : [prefix];
  const out: string[] = [];
  for (const [key, value] of Object.entries(tree)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (isTree(value)) out.push(...leafPaths(value, path));
    else out.push(path);
  }
  return out;
}

/**
 * Refuse a document that sets a local field (or a path no section has: the schema check that
 * follows names those). One message naming every local path found and where to set it instead.
 */
export function checkSharedOnly(document: unknown): void {
  if (!isTree(document)) throw new InputError('SVC_ERR_CONFIG_VERSION_INVALID', 'a shared config document must be an object (a mapping of settings)');
  const local = leafPaths(document).filter((path) => {
    const top = path.split('.')[0] as string;
    const sharedHere = SHARED_CONFIG_PATHS.some((shared) => isUnder(path, shared) || isUnder(shared, path));
    // A top-level key the shared list never mentions may still be a typo: the schema names it.
    const known = SHARED_CONFIG_PATHS.some((shared) => shared.split('.')[0] === top) || LOCAL_TOP_LEVEL.includes(top);
    return known && !sharedHere;
  });
  if (local.length > 0) {
    throw new InputError(
      'SVC_ERR_CONFIG_LOCAL_FIELD',
      `${local.join(', ')} ${local.length === 1 ? 'is a local field' : 'are local fields'}: set ${local.length === 1 ? 'it' : 'them'} in each node's config file (SVC_CONFIG_FILE) or SVC_* environment; a config version holds shared fields only (docs/config.md)`,
      { details: { paths: local } },
    );
  }
}

const LOCAL_TOP_LEVEL: readonly string[] = ['database', 'instance', 'server', 'scaler', 'dataDir', 'metrics', 'orchestrator', 'relay', 'plugins'];

/** The shared fields of an effective config, as a document a version holds (`config set --seed`, export). */
export function sharedFieldsOf(config: object): Tree {
  const out: Tree = {};
  for (const path of SHARED_CONFIG_PATHS) {
    const value = getPath(config, path);
    if (value === undefined) continue;
    const parts = path.split('.');
    const leaf = parts.pop() as string;
    let node = out;
    for (const part of parts) node = (node[part] ??= {}) as Tree;
    node[leaf] = structuredClone(value);
  }
  return out;
}
