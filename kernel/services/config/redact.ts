// Which config values are secrets: the fields schemas/config.ts marks `secret: true`
// (secret-paths.ts). The spec names four that config versions encrypt; every other secret field
// (the S3 secret access key, the previous master key, the KMS secret) is just as secret, so one
// list serves sealing, redaction and rotation.
import { SvcConfig } from '../../../schemas/config.ts';
import { secretPaths } from './secret-paths.ts';

export const REDACTED = '***REDACTED***';

/** Every path whose value must never be shown: exports, logs, debug bundles. From the schema's marks. */
export const SENSITIVE_CONFIG_PATHS: readonly string[] = secretPaths(SvcConfig);

/**
 * Paths sealed at rest in config versions (AES-256-GCM, `config-field:<path>`): the same list.
 * Local-only ones (secrets.keyOld, orchestrator.kms.secretAccessKey) never reach a version.
 */
export const ENCRYPTED_CONFIG_PATHS: readonly string[] = SENSITIVE_CONFIG_PATHS;

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
