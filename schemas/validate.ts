// Compiled validators shared by every receiving side (HTTP bodies, WebSocket frames, IPC, files).
// Imports nothing but typebox so the agent and both CLIs can use it.
import type { Static, TSchema } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';

export interface ValidationIssue {
  /** JSON-pointer-like path turned into a dot path: `jobs.build.runsOn`. Empty for the root. */
  path: string;
  message: string;
}

export type CheckResult<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

export interface SchemaCheck<S extends TSchema> {
  readonly schema: S;
  check(value: unknown): value is Static<S>;
  validate(value: unknown): CheckResult<Static<S>>;
}

/** `/a/0/b` → `a.0.b` (JSON pointer escapes undone). */
export function pointerToDotPath(pointer: string): string {
  if (pointer === '' || pointer === '/') return '';
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function issuesOf(validator: Validator<any, any>, value: unknown): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const error of validator.Errors(value) as Iterable<{ instancePath: string; message: string; keyword: string; params: Record<string, unknown> }>) {
    // "schema is false" duplicates the additionalProperties error that follows it.
    if (error.keyword === 'boolean') continue;
    let path = pointerToDotPath(error.instancePath);
    let message = error.message;
    if (error.keyword === 'additionalProperties' && Array.isArray(error.params['additionalProperties'])) {
      for (const extra of error.params['additionalProperties'] as string[]) {
        const p = path === '' ? extra : `${path}.${extra}`;
        const key = `${p}\0unknown`;
        if (!seen.has(key)) {
          seen.add(key);
          out.push({ path: p, message: 'unknown field' });
        }
      }
      continue;
    }
    if (error.keyword === 'required' && Array.isArray(error.params['requiredProperties'])) {
      for (const missing of error.params['requiredProperties'] as string[]) {
        const p = path === '' ? missing : `${path}.${missing}`;
        const key = `${p}\0required`;
        if (!seen.has(key)) {
          seen.add(key);
          out.push({ path: p, message: 'is required' });
        }
      }
      continue;
    }
    const key = `${path}\0${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ path, message });
  }
  // A union of literals fails once per member ("must be equal to constant") and once for the
  // union; one line per path reads better.
  const unionPaths = new Set(out.filter((i) => i.message === 'must match a schema in anyOf').map((i) => i.path));
  const collapsed = out
    .filter((i) => !(unionPaths.has(i.path) && i.message === 'must be equal to constant'))
    .map((i) => (i.message === 'must match a schema in anyOf' ? { path: i.path, message: 'is not one of the allowed values' } : i));
  if (collapsed.length === 0) collapsed.push({ path: '', message: 'does not match the expected shape' });
  return collapsed;
}

/** Compile a schema once; reuse the result everywhere that shape is received. */
export function compileSchema<S extends TSchema>(schema: S): SchemaCheck<S> {
  const validator = Compile(schema);
  return {
    schema,
    check: (value: unknown): value is Static<S> => validator.Check(value),
    validate(value: unknown): CheckResult<Static<S>> {
      if (validator.Check(value)) return { ok: true, value: value as Static<S> };
      return { ok: false, issues: issuesOf(validator, value) };
    },
  };
}

/**
 * A discriminated union on `type`: the discriminator picks the member first so a refusal
 * names the real problem instead of listing every member's complaints.
 */
export function compileMessageUnion<S extends TSchema & { properties: { type: { const: string } } }>(
  members: readonly S[],
): SchemaCheck<S> & { types: readonly string[] } {
  const byType = new Map<string, SchemaCheck<S>>();
  for (const member of members) {
    const type = member.properties.type.const;
    if (byType.has(type)) throw new Error(`duplicate message type ${type}`);
    byType.set(type, compileSchema(member));
  }
  const validate = (value: unknown): CheckResult<Static<S>> => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return { ok: false, issues: [{ path: '', message: 'must be an object' }] };
    }
    const type = (value as { type?: unknown }).type;
    if (typeof type !== 'string') return { ok: false, issues: [{ path: 'type', message: 'is required and must be a string' }] };
    const member = byType.get(type);
    if (!member) return { ok: false, issues: [{ path: 'type', message: `unknown message type "${type}"` }] };
    return member.validate(value);
  };
  return {
    schema: undefined as unknown as S,
    types: [...byType.keys()],
    check: (value: unknown): value is Static<S> => validate(value).ok,
    validate,
  };
}

export function formatIssues(issues: readonly ValidationIssue[]): string {
  return issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`)).join('; ');
}
