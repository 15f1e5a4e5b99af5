// Encrypting sensitive fields of stored shared config versions (spec: config versions): each
// value is sealed with additional data `config-field:<path>`; `encrypted_paths` records which.
import { ENCRYPTED_CONFIG_PATHS } from '../config/redact.ts';
import { InputError } from '../../../core/errors.ts';
import { openWithAny, seal, openText, type NamedKey } from './sealing.ts';

export function configFieldAd(path: string): string {
  return `config-field:${path}`;
}

export function encryptConfigField(key: Buffer, path: string, value: string): string {
  return seal(key, value, configFieldAd(path));
}

export function decryptConfigField(key: Buffer, path: string, sealed: string): string {
  return openText(key, sealed, configFieldAd(path));
}

type Tree = Record<string, unknown>;

function parentOf(tree: Tree, path: string): { node: Tree; leaf: string } | undefined {
  const parts = path.split('.');
  const leaf = parts.pop()!;
  let node: unknown = tree;
  for (const part of parts) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, part)) return undefined;
    node = (node as Tree)[part];
  }
  if (typeof node !== 'object' || node === null || !Object.hasOwn(node, leaf)) return undefined;
  return { node: node as Tree, leaf };
}

/** Seal every present sensitive string in a config document; returns a copy and the paths sealed. */
export function encryptConfigFields(
  key: Buffer,
  config: Tree,
  paths: readonly string[] = ENCRYPTED_CONFIG_PATHS,
): { config: Tree; encryptedPaths: string[] } {
  const copy = structuredClone(config);
  const encryptedPaths: string[] = [];
  for (const path of paths) {
    const at = parentOf(copy, path);
    if (!at || at.node[at.leaf] === undefined) continue;
    const value = at.node[at.leaf];
    if (typeof value !== 'string') {
      throw new InputError('SVC_ERR_CONFIG_INVALID', `config ${path}: must be a string to be encrypted`);
    }
    at.node[at.leaf] = encryptConfigField(key, path, value);
    encryptedPaths.push(path);
  }
  return { config: copy, encryptedPaths };
}

/**
 * Open the sealed fields of a stored config document with any of the master keys. `staleKeys`
 * lists the paths opened by a key other than the first, which the caller should re-seal.
 */
export function decryptConfigFields(
  keys: readonly NamedKey[],
  config: Tree,
  encryptedPaths: readonly string[],
): { config: Tree; staleKeys: string[] } {
  const copy = structuredClone(config);
  const staleKeys: string[] = [];
  for (const path of encryptedPaths) {
    const at = parentOf(copy, path);
    if (!at) continue;
    const sealed = at.node[at.leaf];
    if (typeof sealed !== 'string') {
      throw new InputError('SVC_ERR_CONFIG_INVALID', `config ${path}: listed as encrypted but holds no sealed value`);
    }
    const { name, plaintext } = openWithAny(keys, sealed, configFieldAd(path));
    at.node[at.leaf] = plaintext.toString('utf8');
    if (name !== keys[0]?.name) staleKeys.push(path);
  }
  return { config: copy, staleKeys };
}
