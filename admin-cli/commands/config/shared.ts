// What the `svc-admin config` commands share: the database and master keys (as the signing-key
// commands read them), reading a document file, `key=value` pairs, and printing a document.
import { readFile } from 'node:fs/promises';
import { parseDocument, stringify } from 'yaml';
import { USAGE_ERROR_CODE } from '../../../core/cli/base-command.ts';
import { InputError, messageOf } from '../../../core/errors.ts';
import { schemaAt } from '../../../kernel/services/config/index.ts';

export { adminConfig, adminMasterKeys, databaseFlag, databaseUrlOf, withDatabase } from '../signing-key/shared.ts';

type Tree = Record<string, unknown>;

const isTree = (value: unknown): value is Tree => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A YAML (or JSON, which is YAML) file holding one mapping of shared settings. */
export async function readDocumentFile(file: string): Promise<Tree> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(USAGE_ERROR_CODE, `--file ${file} could not be read: ${messageOf(error)}`);
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  const syntax = doc.errors[0];
  if (syntax) throw new InputError(USAGE_ERROR_CODE, `--file ${file} is not valid YAML or JSON: ${syntax.message.split('\n')[0]}`);
  const value: unknown = doc.toJS({ maxAliasCount: 100 });
  if (value === null || value === undefined) return {};
  if (!isTree(value)) throw new InputError(USAGE_ERROR_CODE, `--file ${file} must hold a mapping of settings (e.g. "queue:\\n  maxDepth: 500")`);
  return value;
}

/**
 * `path=value` → value typed by the field's schema: numbers and booleans as such, `path=` (empty)
 * removes the field, anything else is a string. A value for an object field is JSON.
 */
export function applyPair(document: Tree, pair: string): void {
  const at = pair.indexOf('=');
  if (at <= 0) throw new InputError(USAGE_ERROR_CODE, `"${pair}" is not key=value (e.g. queue.maxDepth=500)`);
  const path = pair.slice(0, at).trim();
  const raw = pair.slice(at + 1);
  if (!/^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9:._-]+)*$/.test(path)) throw new InputError(USAGE_ERROR_CODE, `"${path}" is not a config dot path (e.g. queue.maxDepth)`);
  const parts = path.split('.');
  const leaf = parts.pop() as string;
  let node = document;
  for (const part of parts) {
    if (!isTree(node[part])) node[part] = {};
    node = node[part] as Tree;
  }
  if (raw === '') {
    delete node[leaf];
    return;
  }
  node[leaf] = typedValue(path, raw);
}

function typedValue(path: string, raw: string): unknown {
  const type = (schemaAt(path) as { type?: string } | undefined)?.type;
  if (type === 'integer' || type === 'number') {
    if (!/^[+-]?\d+(\.\d+)?$/.test(raw.trim())) throw new InputError(USAGE_ERROR_CODE, `${path} must be a number, got "${raw}"`);
    return Number(raw.trim());
  }
  if (type === 'boolean') {
    if (!['true', 'false'].includes(raw.trim())) throw new InputError(USAGE_ERROR_CODE, `${path} must be true or false, got "${raw}"`);
    return raw.trim() === 'true';
  }
  if (type === 'object' || type === 'array') {
    try {
      return JSON.parse(raw);
    } catch (error) {
      throw new InputError(USAGE_ERROR_CODE, `${path} takes a JSON value (${messageOf(error)})`);
    }
  }
  return raw;
}

/** A document as YAML for people (the `--json` output carries it as JSON). */
export function documentText(document: unknown): string {
  return stringify(document, { indent: 2 }).trimEnd();
}
