// Which config values are secrets. The spec names four (encrypted in stored config versions and
// replaced in redacted exports); the previous master key and the KMS secret are just as secret.
import type { SvcConfig } from '../../../schemas/config.ts';

export const REDACTED = '***REDACTED***';

/** Paths the spec encrypts at rest in config versions (AES-256-GCM, `config-field:<path>`). */
export const ENCRYPTED_CONFIG_PATHS: readonly string[] = Object.freeze([
  'platform.token',
  'secrets.key',
  'secrets.bootstrapAdminToken',
  'cluster.joinToken',
]);

/** Every path whose value must never be shown: exports, logs, debug bundles. */
export const SENSITIVE_CONFIG_PATHS: readonly string[] = Object.freeze([
  ...ENCRYPTED_CONFIG_PATHS,
  'secrets.keyOld',
  'orchestrator.kms.secretAccessKey',
  'storage.secretAccessKey',
]);

/** Value at a dot path of a plain object tree, or undefined. */
export function getPath(tree: unknown, dotPath: string): unknown {
  let node: unknown = tree;
  for (const part of dotPath.split('.')) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, part)) return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

/**
 * A copy with every sensitive value that is present replaced by `***REDACTED***`. Absent values
 * stay absent, so the export still shows which secrets are configured. Works on any config-shaped
 * tree (effective config or one stored layer).
 */
export function redactConfig<T extends object = SvcConfig>(config: T): T {
  const copy = structuredClone(config) as Record<string, unknown>;
  for (const dotPath of SENSITIVE_CONFIG_PATHS) {
    const parts = dotPath.split('.');
    const leaf = parts.pop()!;
    let node: unknown = copy;
    for (const part of parts) {
      node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[part] : undefined;
    }
    if (typeof node === 'object' && node !== null && Object.hasOwn(node, leaf) && (node as Record<string, unknown>)[leaf] !== undefined) {
      (node as Record<string, unknown>)[leaf] = REDACTED;
    }
  }
  return copy as T;
}
