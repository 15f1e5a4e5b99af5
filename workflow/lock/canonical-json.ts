// Deterministic JSON: object keys sorted recursively (code-unit order), arrays kept in order,
// undefined members dropped. The lock file and its content hash are built on it.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A copy of `value` with every object's keys sorted; rejects what JSON cannot carry. */
export function sortKeysDeep(value: unknown, path = '$'): JsonValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`${path}: ${value} cannot be written as JSON`);
    return value;
  }
  if (Array.isArray(value)) return value.map((item, index) => sortKeysDeep(item === undefined ? null : item, `${path}[${index}]`));
  if (typeof value === 'object') {
    const out: { [key: string]: JsonValue } = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      if (member === undefined) continue;
      out[key] = sortKeysDeep(member, `${path}.${key}`);
    }
    return out;
  }
  throw new TypeError(`${path}: a ${typeof value} cannot be written as JSON`);
}

/** Canonical JSON text with the given indentation (0 for compact). */
export function canonicalStringify(value: unknown, indent = 0): string {
  return JSON.stringify(sortKeysDeep(value), null, indent);
}
