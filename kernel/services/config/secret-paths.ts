// The one list of secret config paths, read off the config schema: a field whose schema carries
// `secret: true` (schemas/config.ts) is a secret. Sealing in stored config versions
// (crypto/config-fields.ts), redacted exports (redact.ts), the "got …" of config errors
// (load.ts) and `svc-admin rotate-key` (through the versions' encrypted_paths) all use it, so a
// new secret field is handled everywhere by marking it once.
import type { TSchema } from 'typebox';

/** One named field of a schema: its dot path (`[]` for array items) and its schema. */
export interface SchemaField {
  path: string;
  schema: TSchema & { secret?: unknown; type?: unknown };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every named field under `schema` (objects, their unions and array items), depth first. */
export function schemaFields(schema: unknown, prefix = ''): SchemaField[] {
  if (!isRecord(schema)) return [];
  const out: SchemaField[] = [];
  if (isRecord(schema['properties'])) {
    for (const [name, field] of Object.entries(schema['properties'])) {
      const path = prefix === '' ? name : `${prefix}.${name}`;
      out.push({ path, schema: field as SchemaField['schema'] }, ...schemaFields(field, path));
    }
  }
  for (const keyword of ['anyOf', 'oneOf', 'allOf'] as const) {
    const variants = schema[keyword];
    if (Array.isArray(variants)) for (const variant of variants) out.push(...schemaFields(variant, prefix));
  }
  if (isRecord(schema['items'])) out.push(...schemaFields(schema['items'], `${prefix}[]`));
  return out;
}

/** Dot paths of the fields marked `secret: true`, each once, in schema order. */
export function secretPaths(schema: TSchema): readonly string[] {
  const paths = schemaFields(schema).filter((field) => field.schema.secret === true).map((field) => field.path);
  const inArrays = paths.filter((path) => path.includes('[]'));
  // A sealed value is addressed by its dot path; one inside an array has none.
  if (inArrays.length > 0) throw new Error(`secret config fields inside arrays cannot be sealed: ${inArrays.join(', ')}`);
  return Object.freeze([...new Set(paths)]);
}
